import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { errorMessage, type Logger } from '../shared/log.js';
import { tracesEndpoint, tracingConfigured } from '../shared/tracing.js';
import { rawSetting } from '../shared/settings-load.js';

/**
 * The OTLP relay: a sandboxed runner has no network of its own, and the host's OTLP settings (the collector's address,
 * its auth headers) are not the agent's to see. So a sandbox exports its spans (the runner's, the MCP server's, the
 * agent CLI's) to the relay instead — on the host's 127.0.0.1 and on a Unix socket bound read-only into the sandbox,
 * which the runner forwards from its own loopback port (src/runner/proxy-forward.ts) — and the relay sends them on
 * to the host's collector with the host's headers. Only OTLP/HTTP trace exports pass; anything else gets 404.
 */

/** The largest export the relay takes (the OTLP exporters batch well below this). */
const MAX_EXPORT_BYTES = 8 * 1024 * 1024;

export class TraceRelay {
  private tcp: http.Server | null = null;
  private unix: http.Server | null = null;
  private socketDir: string | null = null;

  private constructor(
    private readonly target: URL,
    private readonly headers: Record<string, string>,
    private readonly log: Logger,
  ) {}

  /** A relay to the collector `env` names, or undefined when tracing is off. */
  static fromEnvironment(env: NodeJS.ProcessEnv, log: Logger): TraceRelay | undefined {
    if (!tracingConfigured(env)) return undefined;
    const target = URL.canParse(tracesEndpoint(env)) ? new URL(tracesEndpoint(env)) : undefined;
    if (target?.protocol !== 'http:' && target?.protocol !== 'https:') {
      log.warn(`trace relay: "${tracesEndpoint(env)}" is not an http or https URL; sandboxed runners export no spans`);
      return undefined;
    }
    return new TraceRelay(target, otlpHeaders(env), log);
  }

  async start(): Promise<void> {
    this.tcp = http.createServer((req, res) => this.handle(req, res));
    await listen(this.tcp, (server, done) => server.listen(0, '127.0.0.1', done));
    this.socketDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-otlp-'));
    this.unix = http.createServer((req, res) => this.handle(req, res));
    await listen(this.unix, (server, done) => server.listen(this.socketPath()!, done));
    this.log.info(`trace relay on 127.0.0.1:${this.port()} → ${this.target.origin}; sandboxed runners export through it`);
  }

  port(): number {
    return (this.tcp?.address() as AddressInfo | null)?.port ?? 0;
  }

  /** The Unix socket on the host (bound read-only into sandboxes). */
  socketPath(): string | undefined {
    return this.socketDir ? path.join(this.socketDir, 'otlp.sock') : undefined;
  }

  async stop(): Promise<void> {
    for (const server of [this.tcp, this.unix]) {
      if (!server) continue;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    this.tcp = this.unix = null;
    if (this.socketDir) fs.rmSync(this.socketDir, { recursive: true, force: true });
    this.socketDir = null;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== '/v1/traces')
      return answer(res, 404, 'the trace relay takes OTLP trace exports only (POST /v1/traces)');
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_EXPORT_BYTES) {
        answer(res, 413, `an export larger than ${MAX_EXPORT_BYTES} bytes`);
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (res.headersSent) return;
      const body = Buffer.concat(chunks);
      const headers: http.OutgoingHttpHeaders = {
        ...this.headers,
        'content-type': req.headers['content-type'] ?? 'application/json',
        'content-length': body.length,
      };
      if (req.headers['content-encoding']) headers['content-encoding'] = req.headers['content-encoding'];
      const client = this.target.protocol === 'https:' ? https : http;
      const outgoing = client.request(this.target, { method: 'POST', headers }, (upstream) => {
        res.writeHead(upstream.statusCode ?? 502, { 'content-type': upstream.headers['content-type'] ?? 'application/json' });
        upstream.pipe(res);
      });
      outgoing.on('error', (err) => {
        // the collector is down: the exporter in the sandbox retries or drops, as it would talking to it directly
        this.log.debug(`trace relay: ${this.target.origin}: ${errorMessage(err)}`);
        if (!res.headersSent) answer(res, 502, `collector unreachable: ${errorMessage(err)}`);
      });
      outgoing.end(body);
    });
  }
}

/** OTEL_EXPORTER_OTLP_HEADERS / …_TRACES_HEADERS (`k=v,k2=v2`, values URL-encoded), the traces' own winning. */
export function otlpHeaders(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const list of [rawSetting(env, 'OTEL_EXPORTER_OTLP_HEADERS'), rawSetting(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS')]) {
    for (const pair of (list ?? '').split(',')) {
      const at = pair.indexOf('=');
      if (at <= 0) continue;
      try {
        out[decodeURIComponent(pair.slice(0, at).trim()).toLowerCase()] = decodeURIComponent(pair.slice(at + 1).trim());
      } catch {
        // a malformed escape: the pair is left out, as the OpenTelemetry SDK does
      }
    }
  }
  return out;
}

function listen(server: http.Server, start: (server: http.Server, done: () => void) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    start(server, () => resolve());
  });
}

function answer(res: http.ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: message }));
}
