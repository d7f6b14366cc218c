import fs from 'node:fs';
import type net from 'node:net';
import type { Logger } from '../shared/log.js';

/**
 * How many connections the credential proxy holds open (docs/security.md "Resources"): an agent can open sockets to
 * the proxy from its shell as fast as it likes, and every one is a file descriptor of the host's — past the host's
 * limit its HTTP API stops answering. Two caps, both checked when a connection is accepted:
 *
 * - per runner: the connections of one session's runner (its own Unix socket; on 127.0.0.1, the connections that
 *   presented its placeholder) — the excess is refused with 429;
 * - global: all connections of the proxy, below the host's own file-descriptor limit (a quarter of it, since each
 *   forwarded request holds a second descriptor upstream; at most {@link MAX_GLOBAL}) unless set — the excess: 503.
 *
 * A refused connection gets one plain HTTP response saying why, then is closed; each kind of refusal is logged once
 * until the count is back under its cap.
 */
export const MAX_GLOBAL = 4096;

export interface ConnectionLimits {
  /** connections one runner may hold. */
  perRunner: number;
  /** connections the proxy may hold in all; undefined: from the host's file-descriptor limit. */
  global: number | undefined;
}

export class ProxyConnections {
  private total = 0;
  private readonly bySession = new Map<string, number>();
  private readonly owner = new WeakMap<net.Socket, string>();
  private readonly counted = new WeakSet<net.Socket>();
  /** sessions whose refusal was logged (until they are under their cap again), and the global one. */
  private readonly loggedSessions = new Set<string>();
  private loggedGlobal = false;
  private fdLimit = { value: 0, readAt: -Infinity };

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly log: Logger,
    /** the host's soft limit of open files (RLIMIT_NOFILE), read again every few seconds. */
    private readonly openFilesLimit: () => number | undefined = readOpenFilesLimit,
  ) {}

  /** The global cap now. */
  globalCap(): number {
    if (this.limits.global !== undefined) return this.limits.global;
    const now = Date.now();
    if (now - this.fdLimit.readAt > 2000) this.fdLimit = { value: this.openFilesLimit() ?? 4 * MAX_GLOBAL, readAt: now };
    return Math.max(8, Math.min(MAX_GLOBAL, Math.floor(this.fdLimit.value / 4)));
  }

  /**
   * A connection accepted, of `sessionId`'s runner when known (its own socket). Returns false when it was refused:
   * it got its HTTP answer and is being closed.
   */
  admit(socket: net.Socket, sessionId: string | undefined): boolean {
    if (this.total >= this.globalCap()) {
      if (!this.loggedGlobal) {
        this.loggedGlobal = true;
        this.log.warn(`credential proxy: holds ${this.total} connections, its cap (below the host's open-file limit): refusing more until some close`);
      }
      refuseConnection(socket, 503, `Pincer credential proxy: it holds ${this.total} connections, its limit; try again when some have closed`);
      return false;
    }
    if (sessionId !== undefined && !this.charge(socket, sessionId)) return false;
    this.total++;
    this.counted.add(socket);
    socket.once('close', () => this.release(socket));
    return true;
  }

  /**
   * A request on a connection presented `sessionId`'s placeholder (on 127.0.0.1, where a connection is not a
   * runner's own): the connection counts for that runner from now on. Returns false when that is over the runner's
   * cap: the caller answers 429 ({@link runnerRefusal}) and closes it.
   */
  attribute(socket: net.Socket, sessionId: string): boolean {
    const current = this.owner.get(socket);
    if (current === sessionId) return true;
    if (current !== undefined) return false; // one connection, two placeholders: not a runner's own behaviour
    return this.charge(socket, sessionId, false);
  }

  /** What a runner over its cap is told. */
  runnerRefusal(): string {
    return `Pincer credential proxy: this runner holds ${this.limits.perRunner} connections to the proxy, its limit (PINCER_PROXY_RUNNER_CONNECTIONS); close some first`;
  }

  /** The connections held now: in all and per session (for tests and `pincer doctor`). */
  held(): { total: number; bySession: Record<string, number> } {
    return { total: this.total, bySession: Object.fromEntries(this.bySession) };
  }

  private charge(socket: net.Socket, sessionId: string, answer = true): boolean {
    const held = this.bySession.get(sessionId) ?? 0;
    if (held >= this.limits.perRunner) {
      if (!this.loggedSessions.has(sessionId)) {
        this.loggedSessions.add(sessionId);
        this.log.warn(`credential proxy: the runner of ${sessionId} holds ${held} connections, its limit: refusing more until some close`);
      }
      if (answer) refuseConnection(socket, 429, this.runnerRefusal());
      return false;
    }
    this.bySession.set(sessionId, held + 1);
    this.owner.set(socket, sessionId);
    return true;
  }

  private release(socket: net.Socket): void {
    if (!this.counted.has(socket)) return;
    this.counted.delete(socket);
    this.total--;
    if (this.total < this.globalCap() / 2) this.loggedGlobal = false;
    const sessionId = this.owner.get(socket);
    if (sessionId === undefined) return;
    const held = (this.bySession.get(sessionId) ?? 1) - 1;
    if (held > 0) this.bySession.set(sessionId, held);
    else this.bySession.delete(sessionId);
    if (held < this.limits.perRunner / 2) this.loggedSessions.delete(sessionId);
  }
}

/** One HTTP response on a raw socket, before any request was read, then the socket closes. */
export function refuseConnection(socket: net.Socket, status: 429 | 503, message: string): void {
  const body = JSON.stringify({ type: 'error', error: { type: status === 429 ? 'rate_limit_error' : 'overloaded_error', message } });
  const reason = status === 429 ? 'Too Many Requests' : 'Service Unavailable';
  socket.on('error', () => socket.destroy()); // the client went away first: nothing to tell it
  socket.resume(); // whatever it sends is dropped
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\nretry-after: 5\r\nconnection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 5000).unref();
}

/** The soft RLIMIT_NOFILE of this process, from /proc (Linux); undefined elsewhere. */
export function readOpenFilesLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return line === undefined || line === 'unlimited' ? undefined : Number(line);
  } catch {
    // not Linux: no limit known, the default cap holds
    return undefined;
  }
}
