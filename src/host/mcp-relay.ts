import http from 'node:http';
import https from 'node:https';
import { errorMessage, type Logger } from '../shared/log.js';

/**
 * The HTTP MCP relay, served by the credential proxy at `/mcp/<server>`: a runner's HTTP MCP server is addressed by
 * its name only, and the host forwards each request to the URL the session's configuration in the central DB gives
 * that name, with that server's headers (secret references resolved from the host's store at each request). So a
 * sandbox without a network reaches its HTTP servers through the host, nothing else is reachable that way (the
 * configuration is the allow-list), and a header's secret never leaves the host. The runner authenticates as for a
 * model call: its session's placeholder, or its session's own socket.
 *
 * Streamable HTTP is POST (a JSON or an event-stream answer), GET (a long-lived event stream) and DELETE on one URL:
 * bodies are streamed both ways, never buffered, and a stream lasts as long as both sides keep it.
 */

/** Where the relay sends one server's requests. */
export interface McpRelayTarget {
  url: URL;
  /** the server's configured headers, secrets resolved; they replace the client's of the same name */
  headers: Record<string, string>;
}

/**
 * The relay target of `name` for `sessionId` as the host's records have it now. Throws `PincerError` `not-found` for
 * a name the session has no HTTP server by, `not-ready` for a server whose secret the store does not hold.
 */
export type McpRelaySource = (sessionId: string, name: string) => McpRelayTarget;

export const MCP_RELAY_PATH = '/mcp';

/** The server name of a relay path `/mcp/<name>` (no further segment, no query), else undefined. */
export function relayedServerName(url: string): string | undefined {
  const match = /^\/mcp\/([A-Za-z][A-Za-z0-9_-]*)$/.exec(url);
  return match?.[1];
}

/** The client's headers that never pass: hop-by-hop, its `host`, and its `authorization` (the session's placeholder). */
const DROPPED = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'authorization',
]);
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

export function relayMcpRequest(req: http.IncomingMessage, res: http.ServerResponse, name: string, target: McpRelayTarget, log: Logger): void {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [header, value] of Object.entries(req.headers)) if (value !== undefined && !DROPPED.has(header)) headers[header] = value;
  for (const [header, value] of Object.entries(target.headers)) {
    for (const own of Object.keys(headers)) if (own === header.toLowerCase()) delete headers[own];
    headers[header] = value;
  }
  headers.host = target.url.host;
  const client = target.url.protocol === 'https:' ? https : http;
  let answered = false;
  const outgoing = client.request(target.url, { method: req.method, headers }, (upstream) => {
    upstream.once('end', () => (answered = true));
    const status = upstream.statusCode ?? 502;
    if (status >= 300 && status < 400 && upstream.headers.location) {
      // The client would follow it from where the runner runs, past the relay (and, in a sandbox, to nowhere).
      upstream.resume();
      const location = new URL(upstream.headers.location, target.url).href;
      log.warn(`MCP relay: server ${name} (${target.url.origin}) redirects to ${location}`);
      return refuseMcp(res, 502, `the MCP server ${name} redirects (${status}) to ${location}: configure that URL for it instead`);
    }
    const back: http.OutgoingHttpHeaders = {};
    for (const [header, value] of Object.entries(upstream.headers)) if (value !== undefined && !HOP_BY_HOP.has(header)) back[header] = value;
    res.writeHead(status, back);
    res.flushHeaders(); // an event stream's headers go at once: the client waits for them before its first event
    upstream.pipe(res);
  });
  outgoing.on('error', (err) => {
    log.warn(`MCP relay: server ${name} (${target.url.origin}): ${errorMessage(err)}`);
    if (!res.headersSent) refuseMcp(res, 502, `the MCP server ${name} at ${target.url.origin} is unreachable from the host: ${errorMessage(err)}`);
    else res.destroy();
  });
  // the runner hung up (a call's timeout, a stream it closed): the upstream request goes with it
  res.on('close', () => {
    if (!answered) outgoing.destroy();
  });
  req.pipe(outgoing);
}

/** A refusal as a JSON-RPC error (what an MCP client reads from a failed HTTP request), with its HTTP status. */
export function refuseMcp(res: http.ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: `Pincer MCP relay: ${message}` } }));
}
