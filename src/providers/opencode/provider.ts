import { createOpencodeClient, type Event as OpenCodeEvent, type OpencodeClient } from '@opencode-ai/sdk';
import { AsyncQueue } from '../../shared/async-queue.js';
import { createLogger, errorMessage, type Logger } from '../../shared/log.js';
import { ModelDeadline } from '../deadline.js';
import { FollowUps } from '../follow-ups.js';
import { promptToText } from '../prompt-text.js';
import type { AgentProvider, AgentQuery, PrepareInput, ProviderConfig, ProviderEvent, QueryInput } from '../types.js';
import { openCodeConfig, openCodeEnv, openCodeLateServers, readOpenCodeSettings, type OpenCodeSettings } from './config.js';
import { lastAnswer, lastTurnUsage, SessionEvents } from './events.js';
import { reapStaleServer, recordServer } from './pid-file.js';
import { resolveOpenCodeBinary, startOpenCodeServer, type OpenCodeServer } from './server.js';

/**
 * The OpenCode provider. One
 * local server per runner, started when the runner starts (`prepare`) or by the first query, and reused; `abort()`
 * and `close()` stop it. A query prompts the session asynchronously and reads the server's events: the answer is
 * collected at `session.idle`, a follow-up pushed mid-turn aborts the turn and is sent as the next prompt,
 * `session.error` becomes an `error` event.
 */
type Happening =
  | { kind: 'event'; event: OpenCodeEvent }
  | { kind: 'connected' }
  | { kind: 'stream-end'; error?: string }
  | { kind: 'push' }
  | { kind: 'end' }
  | { kind: 'abort' }
  | { kind: 'deadline' };

/** How long a prompt may take to reach the model (plugin loading on a fresh server), at least. */
const SETUP_TIMEOUT_MS = 60_000;

interface Running {
  server: OpenCodeServer;
  client: OpencodeClient;
}

export class OpenCodeProvider implements AgentProvider {
  readonly nativeSlashCommands: readonly string[] = [];
  private readonly settings: OpenCodeSettings;
  private readonly binary: string;
  private readonly log: Logger = createLogger('opencode');
  private running: Promise<Running> | null = null;
  /** aborted by `close()`: stops a server that is still starting. */
  private lifetime = new AbortController();
  /** sessions that got the system prompt from this runner (re-sent once per runner, so CLAUDE.md edits arrive). */
  private readonly systemSent = new Set<string>();

  constructor(config: ProviderConfig) {
    this.settings = readOpenCodeSettings(config.env, config.model);
    this.binary = resolveOpenCodeBinary(this.settings.binary);
  }

  /** Start the server (and load its plugins) at runner start-up, so the first message does not wait for it. */
  prepare(input: PrepareInput): void {
    this.ensureServer(input).catch(() => undefined); // a failure is reported by the first query, which retries
  }

  query(input: QueryInput): AgentQuery {
    const abort = new AbortController();
    const inbox = new AsyncQueue<Happening>();
    const followUps = new FollowUps(() => inbox.push({ kind: 'push' }));
    return {
      push: (message) => followUps.push(message),
      end: () => {
        followUps.end();
        inbox.push({ kind: 'end' });
      },
      abort: () => {
        if (abort.signal.aborted) return;
        abort.abort();
        followUps.end();
        inbox.push({ kind: 'abort' });
        void this.close();
      },
      events: this.run(input, abort.signal, inbox, followUps),
    };
  }

  async close(): Promise<void> {
    const running = this.running;
    this.running = null;
    this.lifetime.abort();
    this.lifetime = new AbortController();
    if (!running) return;
    const server = await running.catch(() => null); // the start failure is reported by the turn that awaited it
    if (server) {
      await server.server.close();
      this.log.info('server stopped');
    }
  }

  private async *run(input: QueryInput, signal: AbortSignal, inbox: AsyncQueue<Happening>, followUps: FollowUps): AsyncGenerator<ProviderEvent> {
    const stream = new AbortController();
    try {
      let client: OpencodeClient;
      let sessionId: string;
      try {
        ({ client } = await this.ensureServer(input));
        this.pumpEvents(client, stream.signal, inbox);
        await waitForConnection(inbox, signal);
        sessionId = await this.openSession(client, input.sessionId);
      } catch (err) {
        if (signal.aborted) return;
        yield { type: 'error', message: `opencode could not start: ${errorMessage(err)}`, retryable: true, classification: 'opencode' };
        return;
      }
      yield { type: 'init', sessionId };
      yield* this.converse(client, sessionId, input, signal, inbox, followUps);
    } finally {
      stream.abort();
    }
  }

  private async *converse(
    client: OpencodeClient,
    sessionId: string,
    input: QueryInput,
    signal: AbortSignal,
    inbox: AsyncQueue<Happening>,
    followUps: FollowUps,
  ): AsyncGenerator<ProviderEvent> {
    const deadline = new ModelDeadline(this.settings.timeoutMs, () => inbox.push({ kind: 'deadline' }));
    const events = new SessionEvents(sessionId, deadline);
    let turnRunning = false;
    let interrupting = false;
    let started = Date.now();
    const send = async (text: string): Promise<void> => {
      const result = await client.session.promptAsync({ path: { id: sessionId }, body: { parts: [{ type: 'text', text }] } });
      if (result.error) throw new Error(`prompt refused: ${JSON.stringify(result.error)}`);
      turnRunning = true;
      started = Date.now();
      events.turnStarted();
      // Before its first model request a fresh server loads its provider plugins for seconds; the model deadline
      // proper starts with the first token or retry (see SessionEvents), this longer one catches a server that hangs.
      deadline.touch(Math.max(deadline.timeoutMs, SETUP_TIMEOUT_MS));
    };
    try {
      await send(this.withSystemPrompt(sessionId, input.systemPrompt, promptToText(input.prompt)));
      for await (const happening of inbox) {
        if (signal.aborted || happening.kind === 'abort') return;
        if (happening.kind === 'end') {
          if (!turnRunning) return;
        } else if (happening.kind === 'push') {
          if (!turnRunning) {
            const pushed = followUps.take();
            if (pushed) await send(pushed);
          } else if (!interrupting) {
            interrupting = true;
            this.log.info('follow-up pushed mid-turn; aborting the turn to re-prompt');
            await client.session.abort({ path: { id: sessionId } });
          }
        } else if (happening.kind === 'deadline') {
          await client.session.abort({ path: { id: sessionId } }).catch(() => undefined); // the server may be gone already: the abort is best effort
          const cause = events.lastRetry ? ` (${events.lastRetry})` : '';
          yield {
            type: 'error',
            message: `no answer from the model server within ${deadline.timeoutMs} ms${cause}`,
            retryable: true,
            classification: 'transport',
          };
          return;
        } else if (happening.kind === 'stream-end') {
          yield {
            type: 'error',
            message: `lost the opencode server's event stream${happening.error ? `: ${happening.error}` : ''}`,
            retryable: true,
            classification: 'opencode',
          };
          return;
        } else if (happening.kind === 'event') {
          const found = events.read(happening.event);
          if (!found) continue;
          if (found.type === 'progress') {
            yield { type: 'progress', message: found.message };
          } else if (found.type === 'error') {
            if (found.name === 'MessageAbortedError' && interrupting) continue;
            yield { type: 'error', message: found.message, retryable: found.retryable, classification: found.classification };
            return;
          } else if (turnRunning && (await isIdle(client, sessionId))) {
            // `session.idle` can come twice after an abort; only an idle session ends the turn.
            turnRunning = false;
            deadline.rest();
            const next = followUps.take();
            if (interrupting) {
              interrupting = false;
              if (next) await send(next);
              else if (followUps.isEnded) return;
              continue;
            }
            const messages = (await client.session.messages({ path: { id: sessionId } })).data ?? [];
            const text = lastAnswer(messages);
            const usage = lastTurnUsage(messages, Date.now() - started);
            this.log.info(`turn completed in ${Date.now() - started} ms`);
            yield { type: 'result', text, ...(usage ? { usage } : {}) };
            if (next) await send(next);
            else if (followUps.isEnded) return;
          }
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      yield { type: 'error', message: `opencode request failed: ${errorMessage(err)}`, retryable: true, classification: 'opencode' };
    } finally {
      deadline.stop();
    }
  }

  /** The system prompt goes in front of the first prompt a session gets from this runner. */
  private withSystemPrompt(sessionId: string, systemPrompt: string | undefined, prompt: string): string {
    if (!systemPrompt || this.systemSent.has(sessionId)) return prompt;
    this.systemSent.add(sessionId);
    return `<system>\n${systemPrompt}\n</system>\n\n${prompt}`;
  }

  private ensureServer(input: PrepareInput): Promise<Running> {
    if (!this.running) {
      const running = this.startServer(input, this.lifetime.signal);
      this.running = running;
      running.catch((err: unknown) => {
        if (this.running === running) this.running = null;
        this.log.warn(`server start failed: ${errorMessage(err)}`);
      });
    }
    return this.running;
  }

  private async startServer(input: PrepareInput, signal: AbortSignal): Promise<Running> {
    const config = openCodeConfig(this.settings, input);
    const env = openCodeEnv(this.settings, input.cwd, config);
    const pidFile = reapStaleServer(env.XDG_STATE_HOME!, (m) => this.log.warn(m));
    const started = Date.now();
    const server = await startOpenCodeServer({ binary: this.binary, env, cwd: input.cwd, timeoutMs: this.settings.startTimeoutMs, signal });
    recordServer(pidFile, server.pid);
    void server.exited.then(() => {
      if (this.running) this.log.warn('server exited');
    });
    const client = createOpencodeClient({ baseUrl: server.url, directory: input.cwd });
    for (const [name, config] of openCodeLateServers(input)) {
      const added = await client.mcp.add({ body: { name, config } }).catch((err: unknown) => ({ error: errorMessage(err) }));
      // never the error body: it may echo the configuration, secrets and all
      if (added.error)
        this.log.warn(`MCP server ${name} could not be added: ${typeof added.error === 'string' ? added.error : 'OpenCode refused its configuration'}`);
    }
    // The first prompt would otherwise load the provider plugins and connect the MCP servers (seconds): do it now.
    await Promise.all([client.config.providers(), client.mcp.status()]).catch((err: unknown) => {
      this.log.warn(`warm-up failed: ${errorMessage(err)}`);
    });
    this.log.info(`server ${server.url} (pid ${server.pid}) ready in ${Date.now() - started} ms`);
    return { server, client };
  }

  /** Reuse the stored session if the server still knows it, else start a new one. */
  private async openSession(client: OpencodeClient, stored: string | undefined): Promise<string> {
    if (stored) {
      const existing = await client.session.get({ path: { id: stored } });
      if (existing.data) return existing.data.id;
      this.log.warn(`session ${stored} not found; starting a new one`);
    }
    const created = await client.session.create({ body: {} });
    if (!created.data) throw new Error(`could not create a session: ${JSON.stringify(created.error)}`);
    return created.data.id;
  }

  /** Server-sent events into the query's inbox, from before the first prompt until the query ends. */
  private pumpEvents(client: OpencodeClient, signal: AbortSignal, inbox: AsyncQueue<Happening>): void {
    void (async () => {
      let error: string | undefined;
      try {
        const { stream } = await client.event.subscribe({ signal, sseMaxRetryAttempts: 1, onSseError: (err: unknown) => (error = errorMessage(err)) });
        for await (const event of stream) {
          const typed = event as OpenCodeEvent | { type: 'server.connected' };
          inbox.push(typed.type === 'server.connected' ? { kind: 'connected' } : { kind: 'event', event: typed as OpenCodeEvent });
        }
      } catch (err) {
        error = errorMessage(err);
      }
      if (!signal.aborted) inbox.push({ kind: 'stream-end', error });
    })();
  }
}

/** Wait for the event stream's `server.connected`, so no event of the first prompt is missed. */
async function waitForConnection(inbox: AsyncQueue<Happening>, signal: AbortSignal): Promise<void> {
  for await (const happening of inbox) {
    if (happening.kind === 'connected') return;
    if (happening.kind === 'stream-end') throw new Error(`event stream failed: ${happening.error ?? 'closed'}`);
    if (signal.aborted || happening.kind === 'abort') throw new Error('aborted');
    // pushes and `end` before the session exists are kept by FollowUps; nothing else can arrive yet.
  }
}

async function isIdle(client: OpencodeClient, sessionId: string): Promise<boolean> {
  const status = await client.session.status();
  const mine = status.data?.[sessionId];
  return !mine || mine.type === 'idle';
}
