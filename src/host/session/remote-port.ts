import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { ConfigFile } from '../../db/config-file.js';
import type { Answer, AnswerRouting } from '../../db/questions.js';
import type { InboundRow } from '../../db/types.js';
import type { TurnUsageRow } from '../../db/usage.js';
import { errorMessage } from '../../shared/log.js';
import { isErrorCode, PincerError } from '../../shared/errors.js';
import type { TaskCommand } from '../../db/tasks.js';
import {
  SessionPortError,
  type Admission,
  type DrainResult,
  type InboxRow,
  type OutboundResult,
  type SessionPort,
  type SessionSnapshot,
  type SessionState,
} from './port.js';
import { EPOCH_HEADER, type CallName } from './serve-protocol.js';

/** What a call got back. */
interface Reply {
  status: number;
  ok: boolean;
  /** the launch epoch the session process answered with */
  epoch: string | null;
  body: Buffer;
}

/** A call that does not answer within this long (beyond its own long-poll wait) is `unavailable`. */
const CALL_TIMEOUT_MS = 15_000;

export interface RemoteTarget {
  sessionId: string;
  /** `http://host:port` of the `session-serve` process. */
  url: string;
  token: string;
  epoch: number;
  /** where files the agent sent are copied before a channel reads them (the host's own, never the session's). */
  filesDir: string;
}

/**
 * The session port as an HTTP client of `pincer session-serve`. Bad input and unknown things come back as the same
 * `PincerError`s a local session throws; no answer is `SessionPortError('unavailable')`, another epoch
 * `SessionPortError('fenced')`.
 */
export class RemoteSessionPort implements SessionPort {
  private readonly inFlight = new Set<AbortController>();
  private readonly agent = new http.Agent({ keepAlive: true });

  constructor(private readonly target: RemoteTarget) {}

  get sessionId(): string {
    return this.target.sessionId;
  }

  get epoch(): number {
    return this.target.epoch;
  }

  accept(row: InboxRow): Promise<{ id: string; seq: number }> {
    return this.call('accept', [row]);
  }

  answer(answer: Answer, routing: AnswerRouting): Promise<{ id: string; seq: number; late: boolean }> {
    return this.call('answer', [answer, routing]);
  }

  sync(afterVersion: number, afterSeq: number, waitMs: number, signal?: AbortSignal): Promise<SessionSnapshot> {
    return this.call('sync', [Math.min(afterVersion, Number.MAX_SAFE_INTEGER), afterSeq, waitMs], waitMs, signal);
  }

  state(): Promise<SessionState> {
    return this.call('state', []);
  }

  ack(results: OutboundResult[]): Promise<void> {
    return this.call('ack', [results]);
  }

  platformMessageIdOf(seq: number): Promise<string | null> {
    return this.call('platformMessageIdOf', [seq]);
  }

  /**
   * The file is copied to the host's own folder, laid out as a session's outbox (`<session>/outbox/<row>/<name>`), so
   * a channel reads it exactly as it reads a local session's file.
   */
  async outboxFile(rowId: string, name: string): Promise<{ name: string; path: string }> {
    const url = `${this.target.url}/v1/sessions/${encodeURIComponent(this.sessionId)}/files/${encodeURIComponent(rowId)}/${encodeURIComponent(name)}`;
    const res = await this.request(url, null, 0);
    if (!res.ok) this.fail(res);
    const dir = path.join(this.target.filesDir, this.sessionId, 'outbox', encodeURIComponent(rowId));
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, encodeURIComponent(name));
    fs.writeFileSync(file, res.body, { mode: 0o600 });
    return { name, path: file };
  }

  publishConfig(config: ConfigFile, secrets?: Record<string, string>): Promise<void> {
    return this.call('publishConfig', secrets && Object.keys(secrets).length > 0 ? [config, secrets] : [config]);
  }

  setAdmission(admission: Admission): Promise<void> {
    return this.call('setAdmission', [admission]);
  }

  runner(command: 'start' | 'stop'): Promise<void> {
    return this.call('runner', [command]);
  }

  usageAfter(afterId: number): Promise<TurnUsageRow[]> {
    return this.call('usageAfter', [afterId]);
  }

  done(ids: string[], incarnation: number): Promise<string[]> {
    return this.call('done', [ids, incarnation]);
  }

  tasks(): Promise<InboundRow[]> {
    return this.call('tasks', []);
  }

  changeTask(taskId: string, command: TaskCommand, timezone: string): Promise<InboundRow | null> {
    return this.call('changeTask', [taskId, command, timezone]);
  }

  async inbound(id: string): Promise<InboundRow | undefined> {
    return (await this.call<InboundRow | null>('inbound', [id])) ?? undefined;
  }

  logTail(lines: number): Promise<string[]> {
    return this.call('logTail', [lines]);
  }

  drain(): Promise<DrainResult> {
    return this.call('drain', [], 60_000);
  }

  /** Calls in flight end at once (a waiting `sync` too), and the kept-alive connections are closed. */
  async close(): Promise<void> {
    for (const controller of this.inFlight) controller.abort();
    this.agent.destroy();
  }

  private async call<T>(method: CallName, args: unknown[], extraMs = 0, signal?: AbortSignal): Promise<T> {
    const url = `${this.target.url}/v1/sessions/${encodeURIComponent(this.sessionId)}/call/${method}`;
    const res = await this.request(url, JSON.stringify({ args }), extraMs, signal);
    if (!res.ok) this.fail(res);
    return (JSON.parse(res.body.toString('utf8')) as { result: T }).result;
  }

  /**
   * One request over the port's kept-alive connections (node:http: a call costs a fraction of what `fetch` costs, and
   * the host makes several per turn). A connection the session process closed while idle is retried once.
   */
  private async request(url: string, body: string | null, extraMs: number, signal?: AbortSignal): Promise<Reply> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), CALL_TIMEOUT_MS + extraMs);
    const onAbort = (): void => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.inFlight.add(controller);
    try {
      let res: Reply;
      try {
        res = await this.send(url, body, controller.signal);
      } catch (err) {
        if (!(err as { reused?: boolean }).reused || controller.signal.aborted) throw err;
        res = await this.send(url, body, controller.signal);
      }
      const epoch = Number(res.epoch);
      if (res.status === 409 || (Number.isFinite(epoch) && epoch > 0 && epoch !== this.target.epoch)) {
        throw new SessionPortError('fenced', `session ${this.sessionId}: another launch owns it (epoch ${res.epoch}, ours ${this.target.epoch})`);
      }
      return res;
    } catch (err) {
      if (err instanceof SessionPortError) throw err;
      throw new SessionPortError('unavailable', `session ${this.sessionId} does not answer: ${errorMessage(err)}`, { cause: err });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      this.inFlight.delete(controller);
    }
  }

  private send(url: string, body: string | null, signal: AbortSignal): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${this.target.token}`, [EPOCH_HEADER]: String(this.target.epoch) };
      if (body !== null) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      const req = http.request(url, { method: body === null ? 'GET' : 'POST', headers, agent: this.agent, signal }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const epoch = res.headers[EPOCH_HEADER.toLowerCase()];
          resolve({ status, ok: status >= 200 && status < 300, epoch: typeof epoch === 'string' ? epoch : null, body: Buffer.concat(chunks) });
        });
      });
      req.on('error', (err) => reject(req.reusedSocket && (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? Object.assign(err, { reused: true }) : err));
      req.end(body ?? undefined);
    });
  }

  private fail(res: Reply): never {
    let body: { error?: string; code?: string } = {};
    try {
      body = JSON.parse(res.body.toString('utf8')) as typeof body;
    } catch {
      // not JSON: the status says enough
    }
    const message = body.error ?? `HTTP ${res.status}`;
    if (res.status === 401) throw new SessionPortError('fenced', `session ${this.sessionId} refused this launch's bearer: ${message}`);
    // The session's own answers (bad input, an unknown task, a quarantined folder) are its error as thrown there; any
    // other failure is one on the way.
    if ((res.status >= 400 && res.status < 500) || body.code === 'quarantined') {
      throw new PincerError(isErrorCode(body.code) ? body.code : res.status === 404 ? 'not-found' : 'invalid-input', message);
    }
    throw new SessionPortError('failed', `session ${this.sessionId}: ${message}`);
  }
}
