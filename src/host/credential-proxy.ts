import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { errorMessage, type Logger } from '../shared/log.js';
import { isPincerError, PincerError } from '../shared/errors.js';
import { MCP_RELAY_PATH, refuseMcp, relayedServerName, relayMcpRequest, type McpRelaySource } from './mcp-relay.js';
import { loopbackPeerUid } from './peer-uid.js';
import { ProxyConnections, type ConnectionLimits } from './proxy-connections.js';
import { DRAIN_AFTER_CLIENT_MS, isModelCall, MAX_REWRITTEN_BODY, MeteredCall, needsUsageOption, withStreamUsage, type ProxyMeter } from './proxy-meter.js';
import type { ProxyApi } from './proxy-usage.js';
import { PROXY_MARKER_ENV, PROXY_SESSION_KEY_ENV, UPSTREAM_BASE_URL_ENV } from '../shared/proxy-env.js';
import { rawSetting, settingOrDefault } from '../shared/settings-load.js';

/**
 * The credential proxy: agents never hold a real key. The host keeps the provider credentials of its own environment;
 * each runner gets, instead, a placeholder token that is only good for its session while its runner runs, and the
 * proxy's base URL (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`, `OPENCODE_BASE_URL`). The proxy listens on 127.0.0.1 and,
 * for sandboxes with their own network namespace, on a Unix socket of each session's own, bound into its sandbox (the
 * runner forwards its own loopback port to it, src/runner/proxy-forward.ts). A request with a live placeholder is
 * forwarded to the real upstream with the real key put in its place; anything else gets 401. The connections it holds
 * are capped per runner and in all (src/host/proxy-connections.ts). Each model call of a session is counted here from
 * the upstream's own usage fields, and refused while the session's agent group is over budget (src/host/proxy-meter.ts).
 * docs/security.md describes the contract.
 *
 * A custom OpenAI-compatible server with no key (a local model: `OPENAI_BASE_URL` alone) is proxied too — there is no
 * secret to guard, so a request without a placeholder passes — so a sandbox without a network of its own can still
 * reach it. Its runners get a placeholder all the same (`PINCER_CREDENTIAL_PROXY_KEY`, presented as their key), so
 * their calls are counted as their session's: a process runner's connections on 127.0.0.1 are told apart by it
 * alone. The placeholder never reaches that server.
 */

/** One upstream API and how its key is carried. */
export interface Upstream {
  /** where requests go: the host's own `*_BASE_URL`, else the public API. */
  base: URL;
  /** the header the real credential goes in, and its value; undefined: a keyless server, requests pass as they are. */
  auth: { header: 'x-api-key' | 'authorization'; value: string } | undefined;
  /** extra headers (the OAuth beta flag for Claude subscription tokens). */
  extraHeaders: Record<string, string>;
}

/** The variables that carry a real credential, per upstream; the runner never sees their values. */
const ANTHROPIC_CREDENTIALS = ['ANTHROPIC_API_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'ANTHROPIC_AUTH_TOKEN'] as const;
const OPENAI_CREDENTIALS = ['OPENAI_API_KEY', 'CODEX_API_KEY', 'OPENCODE_API_KEY'] as const;
export const PROXIED_CREDENTIALS: readonly string[] = [...ANTHROPIC_CREDENTIALS, ...OPENAI_CREDENTIALS];

/** The runner's variable naming the proxy's Unix socket inside a sandbox (set by the launcher). */
export const PROXY_SOCKET_ENV = 'PINCER_CREDENTIAL_PROXY_SOCKET';

const PLACEHOLDER_PREFIX = 'pincer-placeholder-';

/**
 * The variables the proxy reads its upstreams from: the host's environment with the secrets store's values of the
 * credential names on top (a key set with `pincer secret set ANTHROPIC_API_KEY` wins over the environment's, so a
 * rotation there takes effect even when the host was started with a key). Other secrets are not credentials of the proxy.
 */
export function credentialEnvironment(env: NodeJS.ProcessEnv, secrets: ReadonlyMap<string, string>): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const name of PROXIED_CREDENTIALS) {
    const value = secrets.get(name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** What the proxy forwards to: per API, the upstream and its key (none: the host has neither a key nor a server). */
export interface ProxyUpstreams {
  anthropic?: Upstream;
  openai?: Upstream;
}

/**
 * The upstreams of `env` (see {@link credentialEnvironment}). Throws {@link PincerError} `config` on a base URL the
 * proxy cannot forward to.
 */
export function proxyUpstreams(env: NodeJS.ProcessEnv): ProxyUpstreams {
  const anthropic = anthropicUpstream(env);
  const openai = openaiUpstream(env);
  return { ...(anthropic ? { anthropic } : {}), ...(openai ? { openai } : {}) };
}

/**
 * Which upstreams a request of a session goes to (`undefined`: a request without a placeholder). The host answers
 * from the session's agent group's published model-runtime generation, so a rotated key is used from the next
 * upstream request on; a request already forwarded keeps the key it went with.
 */
export type UpstreamSource = (sessionId: string | undefined) => ProxyUpstreams;

export class CredentialProxy {
  private readonly placeholders = new Map<string, string>(); // placeholder → session id
  private readonly bySession = new Map<string, string>(); // session id → placeholder
  /** every connection, from either listener, is served by this one HTTP server (it listens on nothing itself). */
  private readonly http = http.createServer((req, res) => this.handle(req, res));
  private tcp: net.Server | null = null;
  /** the listener for session pods on other machines (`PINCER_K8S_PROXY_LISTEN`), when the host has one. */
  private network: net.Server | null = null;
  /** connections that came in on it: a live placeholder is required there for everything (no keyless pass). */
  private readonly fromNetwork = new WeakSet<object>();
  /** its open connections: a stop ends them (an idle keep-alive one would hold the listener's close for seconds). */
  private readonly tcpSockets = new Set<net.Socket>();
  /** per session: its own Unix socket (in a folder of its own, which its sandbox gets), while its placeholder lives. */
  private readonly unix = new Map<string, { server: net.Server; dir: string; sockets: Set<net.Socket> }>();
  private socketDir: string | null = null;
  private socketCount = 0;
  /** TCP connections from another local user than the host's. */
  private readonly foreign = new WeakSet<object>();
  /** the session whose own Unix socket a connection came in on. */
  private readonly socketSession = new WeakMap<net.Socket, string>();
  readonly connections: ProxyConnections;
  /** counts sessions' model calls and refuses them over budget (undefined: nothing is metered, e.g. in unit tests). */
  private meter: ProxyMeter | undefined;
  /** the sessions' HTTP MCP servers, relayed at `/mcp/<name>` (undefined: no relay, runners reach them directly). */
  private mcpSource: McpRelaySource | undefined;

  private constructor(
    private readonly source: UpstreamSource,
    private readonly log: Logger,
    limits: ConnectionLimits,
  ) {
    this.connections = new ProxyConnections(limits, log);
  }

  /**
   * A proxy for the credentials (and the keyless custom OpenAI-compatible server) in `env`, or undefined when `env`
   * holds none (then runners get no key at all, and a provider that needs one says so). `source`, when given, is
   * asked on every request instead of `env`'s upstreams (the host's published generations: live key rotation).
   */
  static fromEnvironment(env: NodeJS.ProcessEnv, log: Logger, source?: UpstreamSource, limits?: ConnectionLimits): CredentialProxy | undefined {
    const upstreams = proxyUpstreams(env);
    if (!upstreams.anthropic && !upstreams.openai) return undefined;
    return new CredentialProxy(source ?? (() => upstreams), log, limits ?? DEFAULT_LIMITS);
  }

  /**
   * The host's proxy: always there, even while `source` has no upstream at all (a host started with no key), so the
   * first key set later (the secrets store, a new generation) is forwarded from the next runner start on, and the
   * MCP relay serves from the start — no restart. `source` is asked on every request and every runner start.
   */
  static live(source: UpstreamSource, log: Logger, limits?: ConnectionLimits): CredentialProxy {
    return new CredentialProxy(source, log, limits ?? DEFAULT_LIMITS);
  }

  /** From now on, every model call of a session is counted by `meter`, and refused when it says so. */
  meterWith(meter: ProxyMeter): void {
    this.meter = meter;
  }

  /**
   * From now on, the proxy relays each session's HTTP MCP servers (src/host/mcp-relay.ts): runners get the relay's
   * address (`PINCER_MCP_RELAY_URL`) and address a server by its name there.
   */
  relayMcpWith(source: McpRelaySource): void {
    this.mcpSource = source;
  }

  /** The upstreams now (of no session in particular). */
  private get upstreams(): ProxyUpstreams {
    return this.source(undefined);
  }

  /**
   * Listen on 127.0.0.1 (an ephemeral port); sessions' Unix sockets come with their placeholders, in an owner-only
   * folder. With `network`, also on that address for session pods on other machines (their Service port): there
   * every request must carry a live placeholder, whatever it asks for.
   */
  async start(options: { network?: { host: string; port: number } } = {}): Promise<void> {
    // Any local user can connect to 127.0.0.1: only the host's own user (its process runners and sandboxes) may use
    // the proxy there, whatever placeholder it presents. (A sandbox without a network uses its owner-only socket.)
    const ownUid = process.getuid?.();
    this.tcp = net.createServer((socket) => {
      this.tcpSockets.add(socket);
      socket.once('close', () => this.tcpSockets.delete(socket));
      const uid = loopbackPeerUid(socket);
      if (ownUid !== undefined && uid !== undefined && uid !== ownUid) this.foreign.add(socket);
      if (this.connections.admit(socket, undefined)) this.http.emit('connection', socket);
    });
    await new Promise<void>((resolve, reject) => {
      this.tcp!.once('error', reject);
      this.tcp!.listen(0, '127.0.0.1', () => resolve());
    });
    if (options.network) await this.listenForPods(options.network);
    this.socketDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-proxy-'));
    const kinds = Object.entries(this.upstreams)
      .filter(([, u]) => u)
      .map(([name, u]) => `${name} → ${u!.base.origin}${u!.auth ? '' : ' (no key)'}`);
    this.log.info(
      `credential proxy on 127.0.0.1:${this.port()} (${kinds.join(', ') || 'no key yet: one set later is used without a restart'}); runners get placeholder keys`,
    );
  }

  port(): number {
    return (this.tcp?.address() as AddressInfo | null)?.port ?? 0;
  }

  /** The address of the listener for pods (`host:port`), while there is one. */
  networkAddress(): string | undefined {
    const address = this.network?.address() as AddressInfo | null | undefined;
    return address ? `${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}` : undefined;
  }

  /** Connections from anywhere the network lets through (the pods' NetworkPolicy): no local user to check, only placeholders. */
  private async listenForPods(at: { host: string; port: number }): Promise<void> {
    this.network = net.createServer((socket) => {
      this.tcpSockets.add(socket);
      socket.once('close', () => this.tcpSockets.delete(socket));
      this.fromNetwork.add(socket);
      if (this.connections.admit(socket, undefined)) this.http.emit('connection', socket);
    });
    await new Promise<void>((resolve, reject) => {
      this.network!.once('error', reject);
      this.network!.listen(at.port, at.host, () => resolve());
    });
    this.log.info(`credential proxy for session pods on ${this.networkAddress()} (placeholders only)`);
  }

  /**
   * The session's Unix socket on the host (its folder is bound read-only into the session's sandbox), while the
   * session has a placeholder; connections on it count as its runner's.
   */
  socketPath(sessionId: string): string | undefined {
    const own = this.unix.get(sessionId);
    return own ? path.join(own.dir, 'proxy.sock') : undefined;
  }

  /** A fresh socket for the session, in a folder of its own (bound synchronously: the runner may connect at once). */
  private openSocket(sessionId: string): void {
    if (!this.socketDir) return;
    const dir = path.join(this.socketDir, `s${++this.socketCount}`);
    fs.mkdirSync(dir, { mode: 0o700 });
    const sockets = new Set<net.Socket>();
    const server = net.createServer((socket) => {
      this.socketSession.set(socket, sessionId);
      if (!this.connections.admit(socket, sessionId)) return;
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      this.http.emit('connection', socket);
    });
    server.on('error', (err) => this.log.warn(`credential proxy: the socket of ${sessionId}: ${errorMessage(err)}`));
    server.listen(path.join(dir, 'proxy.sock'));
    this.unix.set(sessionId, { server, dir, sockets });
  }

  private closeSocket(sessionId: string): void {
    const own = this.unix.get(sessionId);
    if (!own) return;
    this.unix.delete(sessionId);
    own.server.close();
    for (const socket of own.sockets) socket.destroy(); // its runner stopped: what it left open goes with it
    fs.rmSync(own.dir, { recursive: true, force: true });
  }

  /**
   * The runner environment for `sessionId`: every real credential removed, a fresh placeholder and the proxy's base
   * URL in their place for each upstream the host has a key or a keyless server for (the placeholder of a keyless
   * server only names the session, to count its calls). Replaces any earlier placeholder of the session.
   */
  runnerEnv(sessionId: string, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    this.revoke(sessionId);
    const placeholder = `${PLACEHOLDER_PREFIX}${randomBytes(24).toString('base64url')}`;
    this.placeholders.set(placeholder, sessionId);
    this.bySession.set(sessionId, placeholder);
    this.openSocket(sessionId);
    const out: NodeJS.ProcessEnv = { ...env };
    for (const name of PROXIED_CREDENTIALS) delete out[name];
    const base = `http://127.0.0.1:${this.port()}`;
    const { anthropic, openai } = this.source(sessionId);
    if (anthropic) {
      out.ANTHROPIC_API_KEY = placeholder;
      out.ANTHROPIC_BASE_URL = `${base}/anthropic`;
      out[UPSTREAM_BASE_URL_ENV.ANTHROPIC_BASE_URL] = withoutCredentials(anthropic.base);
    }
    if (openai) {
      // keyless: no key variable (it would make a provider look like it had an OpenAI key), the placeholder apart
      if (openai.auth) out.OPENAI_API_KEY = placeholder;
      else out[PROXY_SESSION_KEY_ENV] = placeholder;
      out.OPENAI_BASE_URL = `${base}/openai`;
      out[UPSTREAM_BASE_URL_ENV.OPENAI_BASE_URL] = withoutCredentials(openai.base);
      if (rawSetting(env, 'OPENCODE_BASE_URL')) out.OPENCODE_BASE_URL = `${base}/openai`;
    }
    if (this.mcpSource) {
      out.PINCER_MCP_RELAY_URL = `${base}${MCP_RELAY_PATH}`;
      out.PINCER_MCP_RELAY_TOKEN = placeholder;
    }
    out[PROXY_MARKER_ENV] = '1';
    return out;
  }

  /** The session's placeholder stops working (its runner stopped). */
  revoke(sessionId: string): void {
    const placeholder = this.bySession.get(sessionId);
    if (placeholder === undefined) return;
    this.bySession.delete(sessionId);
    this.placeholders.delete(placeholder);
    this.closeSocket(sessionId);
  }

  async stop(): Promise<void> {
    for (const sessionId of [...this.unix.keys()]) this.closeSocket(sessionId);
    this.http.closeAllConnections();
    for (const socket of this.tcpSockets) socket.destroy();
    if (this.tcp) await new Promise<void>((resolve) => this.tcp!.close(() => resolve()));
    this.tcp = null;
    if (this.network) await new Promise<void>((resolve) => this.network!.close(() => resolve()));
    this.network = null;
    if (this.socketDir) fs.rmSync(this.socketDir, { recursive: true, force: true });
    this.socketDir = null;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (this.foreign.has(req.socket)) {
      this.log.warn('credential proxy: refused a request from another local user');
      return refuse(res, 403, "Pincer credential proxy: it serves only the host's own user");
    }
    const url = req.url ?? '/';
    const kind = url.startsWith('/anthropic/') || url === '/anthropic' ? 'anthropic' : url.startsWith('/openai/') || url === '/openai' ? 'openai' : undefined;
    const given = presented(req);
    const sessionId = given === undefined ? undefined : this.placeholders.get(given);
    const socketOf = this.socketSession.get(req.socket);
    if (this.fromNetwork.has(req.socket) && sessionId === undefined) {
      this.log.warn(
        `credential proxy: refused a request from the network (${req.socket.remoteAddress}) with ${given === undefined ? 'no' : 'an unknown or revoked'} placeholder`,
      );
      return refuse(res, 401, 'Pincer credential proxy: unknown or revoked placeholder key (it is valid only while its session runs)');
    }
    if (socketOf !== undefined && sessionId !== undefined && sessionId !== socketOf) {
      this.log.warn(`credential proxy: refused a request on the socket of ${socketOf} with another session's placeholder`);
      return refuse(res, 403, "Pincer credential proxy: this socket serves its own session's placeholder only");
    }
    if (socketOf === undefined && sessionId !== undefined && !this.connections.attribute(req.socket, sessionId)) {
      res.shouldKeepAlive = false;
      return refuse(res, 429, this.connections.runnerRefusal());
    }
    if (url === MCP_RELAY_PATH || url.startsWith(`${MCP_RELAY_PATH}/`)) return this.relayMcp(req, res, url, sessionId ?? socketOf);
    let upstream: Upstream | undefined;
    try {
      upstream = kind && this.source(sessionId)[kind];
    } catch (err) {
      // the session's group has no published generation (its first build failed): nothing to forward with
      this.log.warn(`credential proxy: ${errorMessage(err)}`);
      return refuse(res, 503, `Pincer credential proxy: ${errorMessage(err)}`);
    }
    if (!kind || !upstream) return refuse(res, 404, `no upstream for ${url.split('?')[0]} (the host has neither a key nor a server of its own for it)`);
    if (upstream.auth && sessionId === undefined) {
      this.log.warn(`credential proxy: refused a ${kind} request with ${given === undefined ? 'no' : 'an unknown or revoked'} placeholder`);
      return refuse(res, 401, 'Pincer credential proxy: unknown or revoked placeholder key (it is valid only while its session runner runs)');
    }
    if (climbsOut(url.slice(kind.length + 1).split('?')[0]!)) {
      this.log.warn(`credential proxy: refused a ${kind} request whose path climbs out when decoded`);
      return refuse(res, 400, "Pincer credential proxy: the path leads outside the upstream's base URL (an encoded slash, backslash or dot segment)");
    }
    const target = new URL(upstream.base.href.replace(/\/$/, '') + url.slice(kind.length + 1));
    // Only below the base URL: `..` (written plainly or encoded) would reach the server's other endpoints — a local
    // model server's administration, a gateway's key management — with the host's key or from inside a sandbox.
    const basePath = upstream.base.pathname.replace(/\/$/, '');
    if (target.origin !== upstream.base.origin || !(target.pathname === basePath || target.pathname.startsWith(`${basePath}/`))) {
      this.log.warn(`credential proxy: refused a ${kind} request for a path outside ${upstream.base.origin}${basePath}/`);
      return refuse(res, 400, `Pincer credential proxy: the path leads outside the upstream's base URL (${basePath || '/'})`);
    }
    // a session's calls: its placeholder's, or (a keyless upstream) those on its own socket
    const caller = sessionId ?? socketOf;
    let call: MeteredCall | undefined;
    if (this.meter && caller !== undefined) {
      let refusal: string | undefined;
      try {
        refusal = this.meter.refusal(caller);
        if (!refusal && isModelCall(kind, req.method, target.pathname))
          call = new MeteredCall(this.meter, this.meter.started(caller, kind, target.pathname), kind);
      } catch (err) {
        // fail closed: a call that cannot be checked or counted is not forwarded
        this.log.warn(`credential proxy: the usage of ${caller} could not be read or written: ${errorMessage(err)}`);
        return refuse(res, 503, `Pincer credential proxy: the budget could not be checked (${errorMessage(err)}); try again`);
      }
      if (refusal) {
        this.log.info(`credential proxy: refused a ${kind} request of ${caller}: over budget`);
        return refuseOverBudget(res, kind, refusal);
      }
    }
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name) || name === 'host') continue;
      // keyed: the real credential replaces whatever the client sent; keyless: the client's own header passes, but
      // not a placeholder (it names a session to the proxy, nothing to the server)
      if ((name === 'x-api-key' || name === 'authorization') && (upstream.auth || isPlaceholderHeader(value))) continue;
      headers[name] = value;
    }
    headers.host = target.host;
    if (upstream.auth) headers[upstream.auth.header] = upstream.auth.value;
    for (const [name, value] of Object.entries(upstream.extraHeaders)) {
      headers[name] = headers[name] ? `${String(headers[name])},${value}` : value;
    }
    // a metered call's answer is read for its usage: plain, so no encoding the proxy cannot read hides it
    if (call) headers['accept-encoding'] = 'identity';
    const forward = (body: Buffer | undefined): void => {
      if (body) {
        headers['content-length'] = String(body.length);
        delete headers['transfer-encoding'];
      }
      this.forward(req, res, { kind, target, headers, call, body });
    };
    // an OpenAI stream carries usage only when asked for: the proxy asks, so none goes uncounted
    if (call && needsUsageOption(kind, target.pathname)) {
      readBody(req, MAX_REWRITTEN_BODY).then(
        (body) => {
          if (body) return forward(withStreamUsage(body));
          call.finish();
          res.shouldKeepAlive = false;
          refuse(res, 413, `Pincer credential proxy: a request body over ${MAX_REWRITTEN_BODY} bytes`);
        },
        () => call.finish(), // the client went away while sending: nothing was forwarded
      );
      return;
    }
    forward(undefined);
  }

  /** A request for a session's HTTP MCP server: to the URL and with the headers the host's records give its name. */
  private relayMcp(req: http.IncomingMessage, res: http.ServerResponse, url: string, caller: string | undefined): void {
    const name = relayedServerName(url);
    if (!this.mcpSource || name === undefined) return refuseMcp(res, 404, `no MCP server at ${url.split('?')[0]} (the relay serves /mcp/<server name>)`);
    if (caller === undefined) {
      this.log.warn(`credential proxy: refused an MCP relay request for ${name} with no valid placeholder`);
      return refuseMcp(res, 401, 'unknown or revoked placeholder (it is valid only while its session runner runs)');
    }
    let target;
    try {
      target = this.mcpSource(caller, name);
    } catch (err) {
      const status = isPincerError(err, 'not-found') ? 404 : 503;
      this.log.warn(`credential proxy: MCP relay for ${caller}: ${errorMessage(err)}`);
      return refuseMcp(res, status, errorMessage(err));
    }
    relayMcpRequest(req, res, name, target, this.log);
  }

  /** Send the request upstream (its body: `body` when the proxy rewrote it, else the client's, streamed) and pipe the answer back. */
  private forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    {
      kind,
      target,
      headers,
      call,
      body,
    }: { kind: ProxyApi; target: URL; headers: http.OutgoingHttpHeaders; call: MeteredCall | undefined; body: Buffer | undefined },
  ): void {
    const client = target.protocol === 'https:' ? https : http;
    let answered = false;
    const outgoing = client.request(target, { method: req.method, headers }, (upstreamRes) => {
      const back: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(upstreamRes.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) back[name] = value;
      call?.response(upstreamRes);
      upstreamRes.once('end', () => (answered = true));
      res.writeHead(upstreamRes.statusCode ?? 502, back);
      upstreamRes.pipe(res);
    });
    outgoing.on('error', (err) => {
      call?.finish();
      this.log.warn(`credential proxy: ${kind} upstream ${target.origin}: ${errorMessage(err)}`);
      if (!res.headersSent) refuse(res, 502, `Pincer credential proxy: upstream ${target.origin} unreachable: ${errorMessage(err)}`);
      else res.destroy();
    });
    // The client went away: a metered call's upstream is read a little longer (its usage is in its last event), so
    // hanging up just before it is no way to call for free.
    const cut = (): void => {
      if (answered) return;
      if (call) setTimeout(() => outgoing.destroy(), DRAIN_AFTER_CLIENT_MS).unref();
      else outgoing.destroy();
    };
    req.on('aborted', cut);
    res.on('close', cut);
    if (body) {
      call?.sent(body);
      outgoing.end(body);
    } else {
      if (call) req.on('data', (chunk: Buffer) => call.sent(chunk));
      req.pipe(outgoing);
    }
  }
}

/** The caps of a proxy whose host gave none: the settings' defaults. */
const DEFAULT_LIMITS: ConnectionLimits = { perRunner: settingOrDefault({}, 'PINCER_PROXY_RUNNER_CONNECTIONS'), global: undefined };

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/**
 * Whether a request path could leave the base once an upstream decodes it: an encoded slash or backslash (`..%2f`,
 * which the URL parser keeps as one segment and a server may decode, then normalise), a raw backslash, or a `.`/`..`
 * segment at any depth of percent-decoding (`%2e%2e`, `%252e%252e`). No model API needs any of these.
 */
export function climbsOut(pathname: string): boolean {
  let current = pathname;
  for (let depth = 0; depth < 4; depth++) {
    if (/%(2f|5c)|\\/i.test(current)) return true;
    if (current.split('/').some((segment) => segment === '.' || segment === '..')) return true;
    let decoded: string;
    try {
      decoded = decodeURIComponent(current);
    } catch {
      return true; // a malformed escape: nothing to forward
    }
    if (decoded === current) return false;
    current = decoded;
  }
  return true;
}

/** Whether a key header's value is a placeholder (`x-api-key: pincer-placeholder-…`, `Bearer pincer-placeholder-…`). */
function isPlaceholderHeader(value: string | string[]): boolean {
  return [value].flat().some((v) => v.replace(/^Bearer\s+/i, '').startsWith(PLACEHOLDER_PREFIX));
}

/** The placeholder a client presented: `x-api-key` (Anthropic) or `Authorization: Bearer` (both APIs). */
function presented(req: http.IncomingMessage): string | undefined {
  const key = req.headers['x-api-key'];
  if (typeof key === 'string' && key.startsWith(PLACEHOLDER_PREFIX)) return key;
  const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  return bearer?.startsWith(PLACEHOLDER_PREFIX) ? bearer : undefined;
}

/**
 * The upstream as a runner may know it: where it is (to choose a wire API), never what the host's URL may carry to
 * authenticate — a user and password, or a query string (some gateways take their key there).
 */
function withoutCredentials(base: URL): string {
  return `${base.origin}${base.pathname}`.replace(/\/$/, '');
}

/**
 * A model call refused because the group is over budget, as each API says "out of credit" (so its SDK shows the
 * message and does not retry): Anthropic 400 `invalid_request_error`, OpenAI 429 `insufficient_quota`.
 */
function refuseOverBudget(res: http.ServerResponse, kind: ProxyApi, message: string): void {
  const headers = { 'content-type': 'application/json', 'x-should-retry': 'false' };
  if (kind === 'anthropic') {
    res.writeHead(400, headers);
    res.end(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message } }));
  } else {
    res.writeHead(429, headers);
    res.end(JSON.stringify({ error: { message, type: 'insufficient_quota', code: 'insufficient_quota', param: null } }));
  }
}

/** The request's body, or undefined once it is over `max` bytes (the rest is not read). */
function readBody(req: http.IncomingMessage, max: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.pause();
        resolve(undefined);
      } else chunks.push(chunk);
    });
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
    req.once('aborted', () => reject(new Error('aborted')));
  });
}

function refuse(res: http.ServerResponse, status: number, message: string): void {
  const type = status === 401 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : 'proxy_error';
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ type: 'error', error: { type, message } }));
}

function anthropicUpstream(env: NodeJS.ProcessEnv): Upstream | undefined {
  const base = (): URL => baseUrlSetting(env, 'ANTHROPIC_BASE_URL') ?? new URL('https://api.anthropic.com');
  const apiKey = rawSetting(env, 'ANTHROPIC_API_KEY');
  if (apiKey) return { base: base(), auth: { header: 'x-api-key', value: apiKey }, extraHeaders: {} };
  const oauth = rawSetting(env, 'CLAUDE_CODE_OAUTH_TOKEN');
  if (oauth) return { base: base(), auth: { header: 'authorization', value: `Bearer ${oauth}` }, extraHeaders: { 'anthropic-beta': 'oauth-2025-04-20' } };
  if (rawSetting(env, 'ANTHROPIC_AUTH_TOKEN'))
    return { base: base(), auth: { header: 'authorization', value: `Bearer ${rawSetting(env, 'ANTHROPIC_AUTH_TOKEN')}` }, extraHeaders: {} };
  return undefined;
}

function openaiUpstream(env: NodeJS.ProcessEnv): Upstream | undefined {
  const key = rawSetting(env, 'OPENAI_API_KEY') || rawSetting(env, 'CODEX_API_KEY') || rawSetting(env, 'OPENCODE_API_KEY');
  const custom = baseUrlSetting(env, rawSetting(env, 'OPENCODE_BASE_URL') ? 'OPENCODE_BASE_URL' : 'OPENAI_BASE_URL');
  if (!key && !custom) return undefined;
  const base = custom ?? new URL('https://api.openai.com/v1');
  return { base, auth: key ? { header: 'authorization', value: `Bearer ${key}` } : undefined, extraHeaders: {} };
}

/**
 * A base URL from the host's environment, or undefined when unset. The proxy forwards to it, so one that is not an
 * http(s) URL (`localhost:11434/v1`, without its scheme) stops the host at once, naming the variable.
 */
function baseUrlSetting(env: NodeJS.ProcessEnv, name: string): URL | undefined {
  const value = env[name];
  if (!value) return undefined;
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    throw new PincerError('config', `${name}: "${value}" is not an http or https URL (write it with its scheme, e.g. http://127.0.0.1:11434/v1)`);
  }
  return url;
}
