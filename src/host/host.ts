import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { isSessionDbError } from '../db/connection.js';
import { parseInboundContent, type InboundContent } from '../db/content.js';
import type { OutboundRow } from '../db/types.js';
import { createLogger, errorMessage, type Logger } from '../shared/log.js';
import { NO_TRACING, type Tracing } from '../shared/tracing.js';
import { ActionHandlers } from './actions.js';
import { CentralStore, openCentralDb } from './central-db/store.js';
import type { AgentGroup, SessionRecord } from './central-db/types.js';
import type { ChannelAdapter, HostApi, InboundEnvelope, InboundReceipt, SessionSummary } from './channels/types.js';
import { conversationOf, Delivery, type SessionHandle } from './session/delivery.js';
import { agentReach, outboundCheck } from './outbound-reach.js';
import { PincerError, isPincerError } from '../shared/errors.js';
import { prepareHome } from './home.js';
import { HomeLock, type LockInfo } from './home-lock.js';
import { CredentialProxy, PROXIED_CREDENTIALS, type ProxyUpstreams } from './credential-proxy.js';
import { readCredentials } from './generations/credentials.js';
import { declaredModels, declaresExtensions } from './generations/extensions.js';
import { GenerationPublisher } from './generations/publisher.js';
import { writePublishedView } from './generations/published-file.js';
import type { GenerationView, ModelGeneration } from './generations/types.js';
import { watchCredentials, type CredentialsWatch } from './generations/watch.js';
import { TraceRelay } from './trace-relay.js';
import { scrubOwnEnvironment } from './environ-scrub.js';
import { PLATFORM_SECRETS } from './platforms/catalog.js';
import { SETTINGS } from '../shared/settings.js';
import { SecretsStore } from './secrets.js';
import { mcpRelayTarget, mcpSecretValues } from './mcp-servers.js';
import { McpServerRequests } from './mcp-server-requests.js';
import { nextOccurrence, planTask, type TaskRequest } from '../db/tasks.js';
import { resolveRunnerKind } from './runner-kind.js';
import type { LaunchRunner } from './launchers.js';
import { RunnerSupervisor, stopOrphanRunners } from './session/runners.js';
import { SessionDirectory } from './sessions.js';
import { Inbox } from './inbox.js';
import { SessionPipeline } from './session/pipeline.js';
import { SessionPorts } from './session/ports.js';
import type { SessionEngine } from './session/engine.js';
import { isSessionPortError, type InboxRow, type SessionEvent } from './session/port.js';
import type { HostMetrics } from './metrics.js';
import { bothObservers, HostTraces } from './traces.js';
import { HostUsage } from './usage/host-usage.js';
import { PriceTable, type Price } from './usage/prices.js';
import { TaskBoard } from './tasks.js';
import { isUntrustedPathError } from './untrusted-files.js';
import type { ConversationRef, HostConfig } from './types.js';

/**
 * The host: central DB, session routing and provisioning, channels, and per session a loop that sweeps,
 * keeps one runner alive while there is work, and delivers what the agent sends.
 */
export interface HostOptions {
  config: HostConfig;
  channels: ChannelAdapter[];
  log?: Logger;
  /** where the session of a given `channelType:platformId` lives if it has to be created (`pincer chat --dir`). */
  sessionFolders?: Record<string, string>;
  /** Prometheus metrics to keep (served by the HTTP channel's `/metrics`); none when absent. */
  metrics?: HostMetrics;
  /** traces of each message (on when OTEL_EXPORTER_OTLP_ENDPOINT is set); none when absent. */
  tracing?: Tracing;
  /**
   * channel types that are not among `channels` now but may attach later (a `pincer chat` on this home): their
   * conversations' rows wait for them instead of failing.
   */
  attachableChannels?: string[];
  /** how runners are started; default: the launcher PINCER_RUNNER names (tests: runners in this process). */
  launch?: LaunchRunner;
  /**
   * the host's clock for its own waits (a crashed runner's back-off, a failed delivery's retry), in ms since the epoch;
   * default `Date.now`. Times that runners write (heartbeats, state changes, a row's due time) are read against the
   * real time.
   */
  clock?: () => number;
}

/**
 * A host, started: the central DB opened, every session's port opened, the channels started. What it is made of comes
 * in `deps`: its configuration and channels, the launcher of its runners, and its observers (log, metrics, traces).
 */
export function createHost(deps: HostOptions): Promise<Host> {
  return Host.start(deps);
}

/** Agent-to-agent messages answering each other more often than this in a row are stopped (a loop, not a chat). */
const MAX_AGENT_HOPS = 10;

export class Host implements HostApi {
  readonly store: CentralStore;
  readonly sessions: SessionDirectory;
  /** scheduled tasks of every session, for channels (the HTTP API's task routes). */
  readonly tasks: TaskBoard;
  private readonly log: Logger;
  private readonly supervisor: RunnerSupervisor;
  private readonly delivery: Delivery;
  /** every message accepted and not yet done, per session (what a lost session database is given again). */
  private readonly inbox: Inbox;
  /** per session: the host's pipeline over its port. */
  private readonly pipelines = new Map<string, SessionPipeline>();
  /** the engines of the sessions the host runs itself (local sessions). */
  private readonly engines = new Map<string, SessionEngine>();
  /** sessions whose folder the host will not open (a linked or unreadable session.db): id → why. */
  private readonly quarantined = new Map<string, string>();
  private readonly channels = new Map<string, ChannelAdapter>();
  private stopped = false;
  /** pipelines run once the channels are up (their first notices need them). */
  private running = false;
  private readonly lock: HomeLock;
  /** holds the real provider keys (none yet, maybe: one set later is used from then on); runners get placeholders. */
  readonly credentialProxy: CredentialProxy;
  /** the host's secrets store (what MCP servers' references resolve to at each runner launch). */
  private readonly secrets: SecretsStore;
  /** sandboxed runners' spans reach the host's collector through it (undefined: tracing off, or plain processes). */
  private readonly traceRelay: TraceRelay | undefined;
  readonly usage: HostUsage;
  private readonly traces: HostTraces;
  /** every agent group's model-runtime generation: the one place credentials, models and the catalogue are read */
  readonly generations: GenerationPublisher;
  private credentialsWatch: CredentialsWatch | undefined;
  /** per local session: the turn in flight and the generation its first upstream request went with */
  private readonly turnPins = new Map<string, { turn: string; generation: ModelGeneration }>();
  /** opens each session's port in the host's runner kind. */
  private readonly ports: SessionPorts;
  /** MCP servers agents asked for (add_mcp_server), waiting for or decided by an admin */
  readonly mcpRequests: McpServerRequests;

  private constructor(private readonly options: HostOptions) {
    const { config } = options;
    this.log = options.log ?? createLogger('host');
    const secrets = new SecretsStore(config.home);
    this.generations = new GenerationPublisher({
      readCredentials: (previous) => readCredentials(config.runners.env, () => secrets.read(), previous),
      groups: () => this.store.listAgentGroups(),
      hasExtensions: (group) => declaresExtensions(this.sessions.groupDir(group)),
      extensionModels: (group) => declaredModels(this.sessions.groupDir(group)),
      log: this.log,
      onPublish: (generation) => {
        const group = this.store.getAgentGroup(generation.groupId);
        if (group) writePublishedView(config.home, this.generations.view(group));
        this.afterPublish(generation);
      },
    });
    // Reads only the environment and the secrets store, and may refuse them (a base URL it cannot forward to, a secrets
    // file that is not 0600): before the home is locked.
    this.secrets = secrets;
    this.generations.loadCredentials();
    // always there, with or without a key: the first key set later is used without a restart (and the MCP relay serves)
    this.credentialProxy = CredentialProxy.live((sessionId) => this.upstreamsOf(sessionId), this.log, config.proxy);
    prepareHome(config.home);
    this.lock = HomeLock.acquire(config.home);
    try {
      this.store = new CentralStore(openCentralDb(path.join(config.home, 'pincer.db')), config.home);
    } catch (err) {
      this.lock.release(); // a host that could not start leaves no lock behind
      throw err;
    }
    this.sessions = new SessionDirectory(this.store, config, this.log);
    this.traces = new HostTraces(options.tracing ?? NO_TRACING);
    this.usage = new HostUsage(
      this.store.db,
      PriceTable.load(path.join(config.home, 'prices.json')).useCatalogue((model) => this.cataloguePrice(model)),
      this.log,
      options.metrics,
    );
    this.credentialProxy.meterWith(
      this.usage.proxyMeter((sessionId) => {
        const session = this.store.getSession(sessionId);
        const group = session && this.store.getAgentGroup(session.agentGroupId);
        return session && group ? { session, group } : undefined;
      }),
    );
    // the sessions' HTTP MCP servers through the host: from their group's and session's servers as stored now
    this.credentialProxy.relayMcpWith((sessionId, name) => {
      const session = this.store.getSession(sessionId);
      const group = session && this.store.getAgentGroup(session.agentGroupId);
      if (!session || !group) throw new PincerError('not-found', `session ${sessionId} is not the host's`);
      return mcpRelayTarget({ ...group.mcpServers, ...session.mcpServers }, name, this.secrets);
    });
    options.metrics?.attach({ runnersByState: () => this.runnersByState(), pendingMessages: () => this.pendingMessages() });
    for (const channel of options.channels) this.channels.set(channel.type, channel);
    this.tasks = new TaskBoard(() =>
      [...this.pipelines.values()].map((pipeline) => ({
        id: pipeline.id,
        port: pipeline.port,
        timezone: this.store.getAgentGroup(pipeline.session.agentGroupId)?.timezone ?? 'UTC',
      })),
    );
    // a plain process runner inherits the host's OTEL_* settings and reaches the collector itself
    this.traceRelay = config.runners.kind === 'process' ? undefined : TraceRelay.fromEnvironment(config.runners.env, this.log);
    this.supervisor = new RunnerSupervisor(
      config.runners,
      this.log,
      (exit) => this.engines.get(exit.sessionId)?.onRunnerExit(exit),
      options.launch,
      this.credentialProxy,
      this.traceRelay,
      options.clock,
    );
    this.inbox = new Inbox(this.store.db);
    this.ports = new SessionPorts({
      config,
      store: this.store,
      sessions: this.sessions,
      supervisor: this.supervisor,
      credentials: this.credentialProxy,
      traceRelay: this.traceRelay,
      notify: (session, text) => void this.delivery.notify({ session }, conversationOf({ session }, NO_ROUTING), text),
      log: this.log,
    });
    const globalAdmins = config.defaultGroup?.admins ?? [];
    this.mcpRequests = new McpServerRequests({
      store: this.store,
      channels: this.channels,
      notify: (sessionId, conversation, text) => this.delivery.notify({ session: { id: sessionId } }, conversation, text),
      globalAdmins,
      log: this.log,
    });
    this.delivery = new Delivery({
      now: options.clock,
      channels: this.channels,
      attachable: new Set([...options.channels.filter((c) => c.capabilities.attachable).map((c) => c.type), ...(options.attachableChannels ?? [])]),
      store: this.store,
      actions: new ActionHandlers({ store: this.store, sessions: this.sessions, globalAdmins, mcpRequests: this.mcpRequests }),
      toAgent: (from, row, text) => this.deliverToAgent(from, row, text),
      reach: (session) => outboundCheck(this.store, session, config.defaultGroup?.name),
      write: (handle, row) =>
        this.pipelineOf(handle.session.id)
          .write(row)
          .then((r) => ({ id: r.id, seq: r.seq ?? 0 })),
      config: config.delivery,
      log: this.log,
      observer: bothObservers(
        options.metrics?.deliveryObserver((session, message) => this.inbox.acceptedAt(session, message)),
        this.traces.deliveries((session, message) => this.inbox.traceContextOf(session, message)),
      ),
    });
  }

  /** Use `createHost`. */
  static async start(options: HostOptions): Promise<Host> {
    const log = options.log ?? createLogger('host');
    const runners = await resolveRunnerKind(options.config.runners, log);
    if (options.config.runners.kind === 'auto') log.info(`runners: ${runners.kind} (${runners.why})`);
    const host = new Host({ ...options, log, config: { ...options.config, runners: { ...options.config.runners, kind: runners.kind } } });
    try {
      // before any runner starts: they get its placeholders; session pods reach it on its own listener
      const { sessionPort } = host.options.config;
      const network = sessionPort.kind === 'kubernetes' ? sessionPort.kubernetes.proxyListen : undefined;
      await host.credentialProxy.start(network ? { network } : {});
      await host.traceRelay?.start();
      const adopted = host.store.adoptSessionFolders();
      if (adopted > 0) host.log.info(`${adopted} session folder(s) now stored relative to the home ${options.config.home}`);
      host.sessions.ensureDefaultGroup();
      host.sessions.applyRunProvider();
      host.generations.publishAllNow();
      host.credentialsWatch = watchCredentials(
        options.config.home,
        host.log,
        (why) => void host.generations.republish(why).catch((err: unknown) => host.log.error(`model runtime: ${errorMessage(err)}`)),
      );
      await stopOrphanRunners(host.store.listSessions(), host.options.config.runners, host.log);
      for (const session of host.store.listSessions()) {
        try {
          await host.open(session);
        } catch (err) {
          if (!isPincerError(err, 'quarantined')) throw err; // logged; the other sessions go on
        }
      }
      for (const channel of host.channels.values()) await channel.start(host);
      host.running = true;
      for (const pipeline of host.pipelines.values()) pipeline.run();
    } catch (err) {
      await host.stop();
      throw err;
    }
    for (const [id, reason] of host.quarantined) {
      const session = host.store.getSession(id);
      if (session) await host.delivery.notify({ session }, conversationOf({ session }, NO_ROUTING), quarantineNotice(reason));
    }
    host.log.info(`ready: home ${options.config.home}, ${host.pipelines.size} session(s), channels ${[...host.channels.keys()].join(', ') || 'none'}`);
    return host;
  }

  /** Stop taking input, stop runners (each finishes its query within its grace), deliver what they wrote, close. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // input typed here first: nothing new arrives while the runners finish
    for (const channel of this.channels.values()) if (channel.capabilities.localInput) await channel.stop();
    this.credentialsWatch?.close();
    for (const engine of this.engines.values()) engine.stopStarting();
    await this.supervisor.stopAll();
    for (const pipeline of this.pipelines.values()) {
      await pipeline.stop();
      // What the runners wrote while finishing still goes out.
      await pipeline.flush().catch(() => undefined); // the pipeline logs delivery failures; the rows stay for the next start
      await pipeline.port.close();
    }
    await this.ports.close();
    for (const channel of this.channels.values()) if (!channel.capabilities.localInput) await channel.stop();
    await this.credentialProxy.stop();
    await this.traceRelay?.stop();
    await this.traces.shutdown().catch((err: unknown) => this.log.warn(`trace export failed: ${errorMessage(err)}`));
    this.store.db.close();
    this.lock.release();
    this.log.info('stopped');
  }

  /**
   * A channel of a process that comes and goes (a `pincer chat` attached over the home's chat socket): delivered to
   * from now on, rows that waited for it included (they go with the session's next turn); `detach` stops it, and its
   * conversations' rows wait again. One channel of a type at a time: a second is refused (`conflict`).
   */
  async attachChannel(channel: ChannelAdapter): Promise<{ detach(): Promise<void> }> {
    if (this.stopped) throw new PincerError('cancelled', 'the host is stopping');
    if (this.channels.has(channel.type)) throw new PincerError('conflict', `a ${channel.type} channel is already attached to this host`);
    this.channels.set(channel.type, channel);
    try {
      await channel.start(this);
    } catch (err) {
      this.channels.delete(channel.type);
      throw err;
    }
    let detached = false;
    return {
      detach: async () => {
        if (detached) return;
        detached = true;
        if (this.channels.get(channel.type) === channel) this.channels.delete(channel.type);
        await channel.stop();
      },
    };
  }

  /** What `pincer host status` (and a `pincer chat` looking for this host) reads in the home's lock. */
  announce(details: Omit<LockInfo, 'pid' | 'since' | 'channels'>): void {
    this.lock.describe({ channels: [...this.channels.keys()], ...details });
  }

  /**
   * For a host that is its own process (`pincer host`, `pincer chat`): with the keys in the credential proxy, blank
   * them in this process's environment block, which any same-user process can read at /proc/<pid>/environ.
   */
  hideKeysFromOwnEnvironment(): void {
    // the provider keys (the credential proxy holds them) are gone from this process; the host's own tokens and the
    // platforms' stay usable in it, but no longer readable at /proc/<pid>/environ
    const hostSecrets = [...SETTINGS.filter((s) => s.secret && s.reader === 'host').map((s) => s.name), ...PLATFORM_SECRETS];
    const names = [...PROXIED_CREDENTIALS, ...hostSecrets];
    if (!scrubOwnEnvironment(names, hostSecrets))
      this.log.warn('could not blank the keys and tokens in the host process environment; same-user processes may read them');
  }

  // ---- HostApi (what channels call) ----

  acceptInbound(message: InboundEnvelope): Promise<InboundReceipt> {
    return this.traces.received(message, (traceContext) => this.writeInbound(message, traceContext));
  }

  private async writeInbound(message: InboundEnvelope, traceContext: string | undefined): Promise<InboundReceipt> {
    const parsed = parseInboundContent(message.kind, JSON.stringify(message.content));
    if (!parsed.ok) throw new PincerError('invalid-input', parsed.error);
    const { pipeline, group } = await this.sessionOf(message.conversation);
    if (message.recurrence) nextOccurrence(message.recurrence, group.timezone); // refused here, before anything is written
    const budget = this.usage.gate(group);
    if (budget.over) {
      void this.delivery.notify({ session: pipeline.session }, message.conversation, budget.notice);
      throw new PincerError('over-budget', budget.notice);
    }
    const written = await pipeline.write({
      id: message.id ?? randomUUID(),
      kind: message.kind,
      content: message.content,
      processAfter: message.processAfter ?? null,
      recurrence: message.recurrence ?? null,
      trigger: message.trigger ?? 1,
      traceContext,
      ...routing(message.conversation),
    });
    this.store.recordSender({
      sessionId: pipeline.id,
      messageId: written.id,
      senderId: senderIdOf(parsed.value, message.conversation.channelType),
      ...message.conversation,
    });
    return { sessionId: pipeline.id, ...written };
  }

  async answerQuestion(
    conversation: ConversationRef,
    answer: { questionId: string; selectedOption: string; userId?: string; userVouched?: boolean },
  ): Promise<InboundReceipt> {
    const question = this.store.getQuestion(answer.questionId);
    if (!question || question.channelType !== conversation.channelType || question.platformId !== conversation.platformId) {
      throw new PincerError('not-found', `no question "${answer.questionId}" in this conversation`);
    }
    const pipeline = this.pipelines.get(question.sessionId);
    if (!pipeline) throw new PincerError('not-found', `the session of question "${answer.questionId}" is gone`);
    if (this.mcpRequests.owns(answer.questionId)) return this.mcpRequests.decide(question, answer, (row) => pipeline.write(row));
    if (!this.store.markQuestionAnswered(answer.questionId)) {
      throw new PincerError('invalid-input', `question "${answer.questionId}" was answered already`, { field: 'questionId' });
    }
    // An answer after the question closed (timed out, or its runner stopped) becomes a message the agent sees.
    const { userVouched: _vouched, ...reply } = answer; // the port carries the answer, not the edge's trust in it
    const { late, ...written } = await pipeline.port.answer(reply, routing({ ...conversation, threadId: question.threadId }));
    if (late) this.log.info(`late answer to question ${answer.questionId} in ${pipeline.id} sent to the agent as a message`);
    return { sessionId: pipeline.id, ...written };
  }

  scheduleTask(conversation: ConversationRef, task: TaskRequest): Promise<InboundReceipt> {
    const plan = planTask(task, this.sessions.resolveGroup(conversation).timezone, { runNow: true });
    return this.acceptInbound({ conversation, kind: 'task', content: plan.content, processAfter: plan.processAfter, recurrence: plan.recurrence });
  }

  groupOf(conversation: ConversationRef): AgentGroup {
    return this.sessions.resolveGroup(conversation);
  }

  sessionFolderOf(conversation: ConversationRef): string {
    const group = this.sessions.resolveGroup(conversation);
    const folder = this.options.sessionFolders?.[`${conversation.channelType}:${conversation.platformId}`];
    return this.sessions.sessionFor(group, conversation, folder).folder;
  }

  async listSessions(): Promise<SessionSummary[]> {
    const summaries: SessionSummary[] = [];
    for (const session of this.store.listSessions()) {
      const pipeline = this.pipelines.get(session.id);
      const state = pipeline ? await pipeline.port.state().catch(() => pipeline.state) : null; // the session does not answer: its last known state is listed
      const runner = state?.runner ?? null;
      summaries.push({
        id: session.id,
        agentGroup: this.store.getAgentGroup(session.agentGroupId)?.name ?? session.agentGroupId,
        channelType: session.channelType,
        platformId: session.platformId,
        threadKey: session.threadKey,
        runner: runner
          ? { pid: runner.hostPid, state: runner.state }
          : state?.runnerPid !== undefined && state.runnerPid !== null
            ? { pid: state.runnerPid, state: 'starting' }
            : null,
        pending: state?.pending ?? 0,
        provider: state?.provider ?? null,
        heartbeatAt: runner?.heartbeatAt ?? null,
        lastError: state?.lastError ?? null,
      });
    }
    return summaries;
  }

  /** Stop a session's runner (it finishes its query within its grace); the next due message starts a new one. */
  async stopRunner(sessionId: string): Promise<void> {
    await this.pipelineOf(sessionId).port.runner('stop');
  }

  /** Stop a session's runner if it runs, and start a new one at once. */
  async restartRunner(sessionId: string): Promise<void> {
    const { port } = this.pipelineOf(sessionId);
    await port.runner('stop');
    await port.runner('start');
  }

  /** The last `lines` lines of a session's runner log (the host's own file under `<home>/logs/`). */
  runnerLogTail(sessionId: string, lines: number): Promise<string[]> {
    return this.pipelineOf(sessionId).port.logTail(lines);
  }

  /** Nothing left to do for the session: no open message, nothing undelivered (`pincer chat` with piped input exits then). */
  async isSettled(sessionId: string): Promise<boolean> {
    const pipeline = this.pipelines.get(sessionId);
    if (!pipeline) return true;
    const state = await pipeline.port.state();
    return state.open === 0 && state.undelivered === 0 && this.inbox.unpushed(sessionId).length === 0;
  }

  /** Messages of the session still waiting for the agent (in work, due, or waiting for a retry). */
  async openMessages(sessionId: string): Promise<number> {
    const pipeline = this.pipelines.get(sessionId);
    return pipeline ? (await pipeline.port.state()).open : 0;
  }

  /** The session a conversation maps to (provisioned if new). */
  async sessionOf(conversation: ConversationRef): Promise<{ pipeline: SessionPipeline; group: AgentGroup }> {
    const group = this.sessions.resolveGroup(conversation);
    const folder = this.options.sessionFolders?.[`${conversation.channelType}:${conversation.platformId}`];
    const session = this.sessions.sessionFor(group, conversation, folder);
    return { pipeline: await this.open(session), group };
  }

  private pipelineOf(sessionId: string): SessionPipeline {
    const pipeline = this.pipelines.get(sessionId);
    if (!pipeline) throw new PincerError('not-found', `no session "${sessionId}"`);
    return pipeline;
  }

  // ---- sessions: a port each, and the host's pipeline over it ----

  /** The session's pipeline, its port opened (and its configuration published) on first use. */
  private async open(session: SessionRecord): Promise<SessionPipeline> {
    const quarantined = this.quarantined.get(session.id);
    if (quarantined) throw new PincerError('quarantined', `session ${session.id} is quarantined: ${quarantined}`);
    const known = this.pipelines.get(session.id);
    if (known) return known;
    let opened: Awaited<ReturnType<SessionPorts['open']>>;
    try {
      opened = await this.ports.open(session);
    } catch (err) {
      if (!isUntrustedPathError(err) && !isSessionDbError(err)) throw err;
      // A session the agent broke (or a disk that did) must not take the host down: set it aside, say so once.
      this.quarantine(session, errorMessage(err));
      throw new PincerError('quarantined', `session ${session.id} is quarantined: ${errorMessage(err)}`);
    }
    const { port, engine } = opened;
    const again = this.pipelines.get(session.id);
    if (again) {
      await port.close();
      return again;
    }
    const pipeline = new SessionPipeline(session, port, {
      store: this.store,
      inbox: this.inbox,
      delivery: this.delivery,
      usage: this.usage,
      channels: this.channels,
      log: this.log,
      metrics: this.options.metrics,
      configFor: (s, group) => this.sessions.configFor(s, group, this.generations.published(group.id)?.number),
      modelRuntimeHold: (group) => this.modelRuntimeHold(group),
      secretsFor: (config) => mcpSecretValues(config, this.secrets, this.log, true),
      onEvent: (p, event) => this.onSessionEvent(p, event),
    });
    this.pipelines.set(session.id, pipeline);
    if (engine) this.engines.set(session.id, engine);
    this.sessions.keepLinks(session);
    await pipeline.publish(undefined, true).catch((err: unknown) => {
      // A served session that cannot be launched now: the pipeline publishes on its first turn that reaches it.
      if (!isSessionPortError(err)) throw err;
    });
    engine?.run();
    if (this.running) pipeline.run();
    return pipeline;
  }

  private async onSessionEvent(pipeline: SessionPipeline, event: SessionEvent): Promise<void> {
    const { session } = pipeline;
    if (event.type === 'quarantined') {
      this.pipelines.delete(session.id);
      this.engines.delete(session.id);
      this.quarantine(session, event.reason);
      void pipeline.stop().then(() => pipeline.port.close());
      await this.delivery.notify({ session }, conversationOf({ session }, NO_ROUTING), quarantineNotice(event.reason));
      return;
    }
    if (event.type !== 'reset') return;
    // The provider's own conversation went with the old database's history: the agent starts afresh.
    this.store.setProviderSessionId(session.id, null);
    this.usage.sessionReset(session.id);
    this.sessions.keepLinks(session);
    await pipeline.publish(undefined, true);
    const resent = this.inbox.reopen(session.id, event.unfinished);
    this.log.warn(`session ${session.id}: ${resent.length} accepted message(s) not done yet written into its new database again`);
    const text = event.text + (resent.length > 0 ? ` ${resent.length} message(s) not answered yet were given to it again.` : '');
    const conversations = new Map<string, ConversationRef>();
    for (const row of [NO_ROUTING, ...resent.map(routingOfRow)]) {
      const conversation = conversationOf({ session }, row);
      conversations.set(`${conversation.channelType}\n${conversation.platformId}\n${conversation.threadId ?? ''}`, conversation);
    }
    for (const conversation of conversations.values()) await this.delivery.notify({ session }, conversation, text);
  }

  /** The model catalogue of every agent group, as published (`GET /v1/models`, `pincer models`). */
  modelCatalogue(): GenerationView[] {
    return this.store.listAgentGroups().map((group) => this.generations.view(group));
  }

  /** A model's price in the published generations' catalogues (the same catalogue in every group; the first that has it). */
  private cataloguePrice(model: string): Price | undefined {
    const wanted = model.trim().toLowerCase();
    for (const group of this.store.listAgentGroups()) {
      const found = this.generations
        .published(group.id)
        ?.catalogue.find((entry) => entry.price && (entry.ref.toLowerCase() === wanted || entry.id.toLowerCase() === wanted));
      if (found?.price) return found.price;
    }
    return undefined;
  }

  /**
   * A new generation of a group: its sessions whose runner kept exiting (no key yet, a runtime not set up) start with
   * it at once instead of after their crash back-off — the first key set on a host started without one answers the
   * waiting message without a restart.
   */
  private afterPublish(generation: ModelGeneration): void {
    if (!this.running) return; // host start: no runner has started yet
    for (const [sessionId, engine] of this.engines) {
      if (this.store.getSession(sessionId)?.agentGroupId !== generation.groupId) continue;
      if (this.supervisor.forgetCrashes(sessionId)) engine.wake();
    }
  }

  /** Why runners of `group` may not start: no generation to serve (answered at once; see GenerationPublisher.admit). */
  private modelRuntimeHold(group: AgentGroup): string | undefined {
    try {
      this.generations.admit(group);
      return undefined;
    } catch (err) {
      if (isPincerError(err, 'not-ready')) return err.message;
      throw err;
    }
  }

  /**
   * What the credential proxy forwards a session's request with: its agent group's published generation's credentials,
   * else the newest credentials read. A turn in flight keeps the generation of its first request to its end (a key
   * rotated meanwhile is used from the next turn on, and the open turn is never cut off); a turn is the runner's
   * batch as its state row says now, read from the session database (local sessions; a served session's requests
   * take the newest generation each).
   */
  private upstreamsOf(sessionId: string | undefined): ProxyUpstreams {
    const session = sessionId === undefined ? undefined : this.store.getSession(sessionId);
    const group = session && this.store.getAgentGroup(session.agentGroupId);
    if (!session || !group) return this.generations.currentCredentials()?.upstreams ?? {};
    let generation: ModelGeneration;
    try {
      generation = this.generations.admit(group);
    } catch (err) {
      // a group with no generation (its model configuration cannot be built) still has the host's credentials; its
      // runners are held from starting until it has one, so this serves only a runner that was running already
      if (!isPincerError(err, 'not-ready')) throw err;
      return this.generations.currentCredentials()?.upstreams ?? {};
    }
    const turn = this.turnOf(session.id);
    if (turn === undefined) {
      this.turnPins.delete(session.id);
      return generation.credentials.upstreams;
    }
    const pin = this.turnPins.get(session.id);
    if (pin?.turn === turn) return pin.generation.credentials.upstreams;
    this.turnPins.set(session.id, { turn, generation });
    return generation.credentials.upstreams;
  }

  /** The turn a local session's runner has in flight (`<pid>:<batch ids>`), or undefined when it has none. */
  private turnOf(sessionId: string): string | undefined {
    let live;
    try {
      live = this.engines.get(sessionId)?.liveState();
    } catch {
      return undefined; // a database being set up afresh: no turn to keep
    }
    return live && live.batchIds.length > 0 ? `${live.pid}:${live.batchIds.join(',')}` : undefined;
  }

  private quarantine(session: SessionRecord, reason: string): void {
    this.quarantined.set(session.id, reason);
    this.log.error(
      `session ${session.id} quarantined: ${reason}; the host leaves it alone (move ${session.folder} aside and restart the host to start it afresh)`,
    );
  }

  private runnersByState(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const pipeline of this.pipelines.values()) {
      const state = pipeline.state?.runner?.state;
      if (state) counts[state] = (counts[state] ?? 0) + 1;
    }
    return counts;
  }

  private pendingMessages(): number {
    let sum = 0;
    for (const pipeline of this.pipelines.values()) sum += pipeline.state?.pending ?? 0;
    return sum;
  }

  /** A `channel_type: 'agent'` row: a chat message into the target group's session, answered back the same way. */
  private async deliverToAgent(from: SessionHandle, row: OutboundRow, text: string): Promise<void> {
    const target = row.platform_id ? this.store.findAgentGroup(row.platform_id) : undefined;
    if (!target) throw new Error(`unknown agent group "${row.platform_id}"`);
    const refused = agentReach(this.store, from.session, target, row.in_reply_to, this.options.config.delivery.agentRoutes);
    if (refused) throw new Error(refused);
    const trigger = row.in_reply_to ? await from.port.inbound(row.in_reply_to) : undefined;
    const hops = trigger?.channel_type === 'agent' ? agentHops(trigger.content) + 1 : 1;
    if (hops > MAX_AGENT_HOPS) throw new Error(`agents answered each other ${MAX_AGENT_HOPS} times in a row; stopped as a loop`);
    let session: SessionRecord | undefined;
    if (row.thread_id) {
      session = this.store.getSession(row.thread_id);
      if (!session || session.agentGroupId !== target.id) throw new Error(`session "${row.thread_id}" is not a session of ${target.name}`);
    }
    const conversation = { channelType: 'agent', platformId: from.group.id, threadId: from.session.id };
    session ??= this.sessions.sessionFor(target, { ...conversation, threadId: null });
    const pipeline = await this.open(session);
    const senderId = `agent:${from.group.id}`;
    // One message per outbound row, also when the row is offered again after a crash.
    const written = await pipeline.write({
      id: `agent-${from.session.id}-${row.id}`,
      kind: 'chat',
      content: { text, sender: from.group.name, senderId, agentHops: hops },
      ...routing(conversation),
    });
    this.store.recordSender({ sessionId: session.id, messageId: written.id, senderId, ...conversation });
  }
}

const NO_ROUTING = { channel_type: null, platform_id: null, thread_id: null };

function quarantineNotice(reason: string): string {
  return `This conversation's session is set aside and gets no answers (${reason}). An administrator can move its folder aside and restart the host.`;
}

function routingOfRow(row: InboxRow): { channel_type: string | null; platform_id: string | null; thread_id: string | null } {
  return { channel_type: row.channelType ?? null, platform_id: row.platformId ?? null, thread_id: row.threadId ?? null };
}

function routing(c: ConversationRef): { channelType: string; platformId: string; threadId: string | null } {
  return { channelType: c.channelType, platformId: c.platformId, threadId: c.threadId };
}

/**
 * The sender's platform user id as the channel gave it (never the display name, which anyone can choose). A chat
 * platform's user is `<platform>:<user id>` (telegram:12345), as admin lists and allow-lists name them.
 */
function senderIdOf(parsed: InboundContent, channelType: string): string | null {
  if (parsed.kind === 'chat') return parsed.content.senderId ?? null;
  if (parsed.kind === 'chat-sdk') return parsed.content.author.userId ? `${channelType}:${parsed.content.author.userId}` : null;
  return null;
}

function agentHops(content: string): number {
  try {
    const hops = (JSON.parse(content) as { agentHops?: unknown }).agentHops;
    return typeof hops === 'number' ? hops : 0;
  } catch {
    // agent-written content that is not JSON counts as no hops
    return 0;
  }
}
