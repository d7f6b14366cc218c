import { Agent, type AgentMessage, type AgentTool } from '@mariozechner/pi-agent-core';
import { streamSimple } from '@mariozechner/pi-ai';
import path from 'node:path';
import type { ModelParams } from '../../db/model-settings.js';
import { describeRoute } from '../../runtime/model-route.js';
import { readRuntimeSettings, type RuntimeSettings } from '../../runtime/resources/manifest.js';
import type { CodeTasks } from '../../runtime/tasks/code-mode.js';
import type { CompactionTasks } from '../../runtime/tasks/compaction-plan.js';
import type { FileTasks } from '../../runtime/tasks/file-edit.js';
import { WorkerTaskPool } from '../../runtime/worker-pool/pool.js';
import { createLogger, errorMessage, type Logger } from '../../shared/log.js';
import { providerTimeoutMs } from '../deadline.js';
import { ProviderError } from '../registry.js';
import type { AgentProvider, AgentQuery, PrepareInput, ProviderConfig, QueryInput } from '../types.js';
import { compactionSettings, createCompactor } from './compaction.js';
import { mcpClientSettings } from '../mcp-settings.js';
import { McpConnections } from './mcp-tools.js';
import { buildModel, type BuiltModel } from './model.js';
import { PincerRun } from './run.js';
import { SessionStore } from './session-store.js';
import { bashTool } from './tools/bash.js';
import { codeModeLimits, codeModeTools, stopPrograms, type Programs } from './tools/code-mode.js';
import { Confinement } from './tools/confine.js';
import { extensionTool } from './tools/extension.js';
import { MutationQueue, poolPlanner, type FilePlanner } from './tools/edit.js';
import { fileTools } from './tools/files.js';
import { toolLimits } from './tools/limits.js';
import { settingOrDefault } from '../../shared/settings-load.js';
import { rawSetting } from '../../shared/settings-load.js';

/**
 * The built-in runtime (provider `pincer`; aliases `builtin`, `openclaw`, `pi`): Pincer's own agent loop on model APIs
 * through @mariozechner/pi-agent-core and pi-ai — Anthropic Messages, OpenAI Responses, and Chat Completions on any
 * OpenAI-compatible server — with no agent binary. Tools: read/write/edit/bash in the agent folder, every MCP server
 * the runner configures (Pincer's own inside this process, the others as children), and tools extensions register.
 * The conversation lives in `.pincer-sessions/` of the session folder and is resumed by id; compaction keeps it
 * inside the model's context window.
 */
interface Conversation {
  store: SessionStore;
  agent: Agent;
}

export class PincerProvider implements AgentProvider {
  readonly nativeSlashCommands: readonly string[] = [];
  readonly nativeMedia: readonly ('image' | 'pdf')[];
  /** Compaction archives what it compacts, as Claude's PreCompact hook does; the runner does not archive per query. */
  readonly archivesTranscripts = true;
  private readonly built: BuiltModel;
  private readonly log: Logger = createLogger('pincer');
  private readonly env: Record<string, string | undefined>;
  private readonly timeoutMs: number;
  private mcp: Promise<McpConnections> | undefined;
  private conversation: Conversation | undefined;
  private readonly runs = new Set<PincerRun>();
  /** file-tool planning (matching, normalisation, diffs) runs on this pool; the per-file queue stays here */
  private readonly filePool = new WorkerTaskPool<FileTasks>({ name: 'files', tasks: new URL('../../runtime/tasks/file-edit.js', import.meta.url) });
  private readonly planner: FilePlanner = poolPlanner(this.filePool);
  private readonly fileQueue = new MutationQueue();
  /** compaction planning (token estimation, pruning, the cut, the summary request) runs on this one */
  private readonly compactionPool = new WorkerTaskPool<CompactionTasks>({
    name: 'compaction',
    tasks: new URL('../../runtime/tasks/compaction-plan.js', import.meta.url),
  });
  /** code mode's sandboxed programs (QuickJS) run on this one, a slice at a time; their tool calls run here */
  private readonly codePool = new WorkerTaskPool<CodeTasks>({ name: 'code', tasks: new URL('../../runtime/tasks/code-mode.js', import.meta.url) });
  private readonly programs: Programs = new Map();

  private readonly extensionTools: ProviderConfig['extensionTools'];
  private readonly linkedMcpServers: NonNullable<ProviderConfig['linkedMcpServers']>;

  constructor(config: ProviderConfig) {
    this.env = config.env;
    this.extensionTools = config.extensionTools;
    this.linkedMcpServers = config.linkedMcpServers ?? {};
    const ref = config.model; // the runner's configuration: PINCER_MODEL, else config.json's
    if (!ref) {
      throw new ProviderError(
        'config',
        'pincer: no model configured: set PINCER_MODEL=<provider>/<model> (anthropic/claude-sonnet-4-5, openai/gpt-5, local/qwen3:8b) or "model" in config.json',
      );
    }
    this.built = buildModel(ref, { models: config.models, modelProviders: config.modelProviders }, config.env);
    this.nativeMedia = this.built.model.input.includes('image') ? ['image'] : [];
    this.timeoutMs = providerTimeoutMs(config.env);
    this.log.info(`model ${describeRoute(this.built.route)}, context window ${this.built.model.contextWindow}`);
  }

  prepare(input: PrepareInput): void {
    // The MCP servers start while no message waits, so the first answer does not pay for them.
    void this.tools(input).catch(() => undefined); // a warm-up: the turn that needs the tools reports a failure
  }

  query(input: QueryInput): AgentQuery {
    const run = this.start(input);
    this.runs.add(run.run);
    void run.done.finally(() => this.runs.delete(run.run));
    return {
      push: (message) => run.run.push(message),
      end: () => run.run.end(),
      abort: () => run.run.abort(),
      events: run.run.events,
    };
  }

  async close(): Promise<void> {
    for (const run of this.runs) run.abort();
    stopPrograms(this.programs);
    const mcp = this.mcp;
    this.mcp = undefined;
    if (mcp) await (await mcp.catch(() => undefined))?.close(); // it never connected: nothing to close
    await Promise.all([this.filePool.close(), this.compactionPool.close(), this.codePool.close()]);
  }

  private start(input: QueryInput): { run: PincerRun; done: Promise<void> } {
    const conversation = this.conversationFor(input);
    const run = new PincerRun(conversation.agent, conversation.store.id, (m) => conversation.store.appendMessage(m), this.log, this.timeoutMs, {
      model: this.built.model.id,
      priced: this.built.priced,
    });
    const done = (async () => {
      try {
        conversation.agent.state.tools = await this.tools(input);
        conversation.agent.state.systemPrompt = systemPromptFor(input, this.runtimeSettings(input.groupDir ?? input.cwd).codeMode === true);
        // A user's MCP server left out (did not start in time, or failed): the chat is told once, the turn goes on.
        for (const text of (await this.mcp)?.takeNotices() ?? []) run.events.push({ type: 'notice', text });
      } catch (err) {
        run.events.push({
          type: 'error',
          message: `the built-in runtime could not start its tools: ${errorMessage(err)}`,
          retryable: true,
          classification: 'pincer',
        });
        run.events.end();
        return;
      }
      await run.drive(input.prompt);
    })();
    return { run, done };
  }

  /** The conversation to continue: the one in memory, the one on disk, or a new one. */
  private conversationFor(input: QueryInput): Conversation {
    if (input.sessionId && this.conversation?.store.id === input.sessionId) return this.conversation;
    const workspace = rawSetting(this.env, 'PINCER_WORKSPACE') || path.dirname(input.cwd);
    let store = input.sessionId ? SessionStore.open(workspace, input.sessionId) : undefined;
    let messages: AgentMessage[] = [];
    if (store) {
      messages = store.load((warning) => this.log.warn(warning));
      this.log.info(`resuming conversation ${store.id} (${messages.length} messages)`);
    } else {
      if (input.sessionId) this.log.warn(`conversation ${input.sessionId} not found; starting a new one`);
      store = SessionStore.create(workspace);
      this.log.info(`new conversation ${store.id}`);
    }
    const agent = this.createAgent(store, messages, input);
    this.conversation = { store, agent };
    return this.conversation;
  }

  private createAgent(store: SessionStore, messages: AgentMessage[], input: QueryInput): Agent {
    const { model, apiKey } = this.built;
    const configuredRetries = settingOrDefault(this.env, 'PINCER_MODEL_MAX_RETRIES');
    const maxRetries = Number.isInteger(configuredRetries) && configuredRetries >= 0 ? configuredRetries : 2;
    const agent = new Agent({
      initialState: { systemPrompt: systemPromptFor(input), model, messages, tools: [] },
      getApiKey: () => apiKey,
      // Retries and the request timeout are the SDK clients' own; pi-agent-core passes only what it knows.
      // The model entry's request parameters (temperature, max output tokens, reasoning effort) go on every request.
      streamFn: (m, context, options) =>
        streamSimple(m, context, { ...options, ...requestParams(this.built.route.params), maxRetries, timeoutMs: this.timeoutMs }),
      steeringMode: 'all',
      followUpMode: 'all',
      sessionId: store.id,
    });
    const settings = this.runtimeSettings(input.groupDir ?? input.cwd);
    const compactor = createCompactor({
      settings: compactionSettings(model.contextWindow, settings),
      plan: (planInput, inputBytes, signal) => this.compactionPool.run('planCompaction', { input: planInput, inputBytes, signal }),
      model: () => model,
      apiKey: () => apiKey,
      request: { maxRetries, timeoutMs: this.timeoutMs },
      state: agent.state,
      persist: (summary, kept) => store.appendCompaction(summary, kept),
      agentDir: input.cwd,
      timeZone: rawSetting(this.env, 'TZ') || 'UTC',
      log: (m) => this.log.info(m),
    });
    // pi-agent-core's context hook: compaction happens before any model call, inside a long tool loop too.
    agent.transformContext = (all, signal) => compactor.transform(all, signal);
    return agent;
  }

  /**
   * The group's runtime settings (package.json `"pincer": {"runtime": …}` of the agent folder), read once; the runner
   * already logs their problems with the other resource diagnostics.
   */
  private settings: RuntimeSettings | undefined;
  private runtimeSettings(agentDir: string): RuntimeSettings {
    this.settings ??= readRuntimeSettings(agentDir);
    return this.settings;
  }

  private tools(input: PrepareInput): Promise<AgentTool[]> {
    const limits = toolLimits(this.env);
    if (!this.mcp) {
      const connecting = McpConnections.connect(input.mcpServers, this.linkedMcpServers, {
        settings: mcpClientSettings(this.env),
        maxOutputChars: limits.maxOutputChars,
        log: this.log,
      });
      this.mcp = connecting;
      // a failed start is not kept: the next query tries again
      connecting.catch(() => {
        // the turn that awaited it reports the failure
        if (this.mcp === connecting) this.mcp = undefined;
      });
    }
    return this.mcp.then((mcp) => {
      const tools = [
        ...fileTools({ confinement: new Confinement(input.cwd, input.additionalDirectories), limits, planner: this.planner, queue: this.fileQueue }),
        bashTool(input.cwd, this.env, limits),
        ...mcp.tools(),
        ...(this.extensionTools ?? []).map((tool) => extensionTool(tool, input.cwd, limits.maxOutputChars)),
      ];
      if (this.runtimeSettings(input.cwd).codeMode !== true) return tools;
      // Code mode: the model sees exec and wait; every tool above is reachable from its programs.
      return codeModeTools({ tools, pool: this.codePool, limits: codeModeLimits(this.env, limits.maxOutputChars), log: this.log, programs: this.programs });
    });
  }
}

function requestParams(params: ModelParams): { temperature?: number; maxTokens?: number; reasoning?: ModelParams['reasoning'] } {
  return {
    ...(params.temperature !== undefined ? { temperature: params.temperature } : {}),
    ...(params.maxTokens !== undefined ? { maxTokens: params.maxTokens } : {}),
    ...(params.reasoning !== undefined ? { reasoning: params.reasoning } : {}),
  };
}

function systemPromptFor(input: PrepareInput, codeMode = false): string {
  const where =
    `You work in the folder ${input.cwd}: the read, write, edit and bash tools act there` +
    (input.additionalDirectories?.length ? ` (also in ${input.additionalDirectories.join(', ')})` : '') +
    '.' +
    (codeMode ? ' You reach them, and every other tool, from programs you run with exec (tools.search finds them).' : '');
  return [input.systemPrompt, where].filter(Boolean).join('\n\n');
}
