import type net from 'node:net';
import { rawSetting } from '../shared/settings-load.js';

/**
 * Inside a sandbox with its own network namespace the host's credential proxy (127.0.0.1 on the host) is out of
 * reach; its Unix socket is bound in instead (`PINCER_CREDENTIAL_PROXY_SOCKET`). The runner listens on the sandbox's
 * own 127.0.0.1 at the port of its base URLs and forwards each connection to that socket, so the SDKs use the same
 * plain `ANTHROPIC_BASE_URL`/`OPENAI_BASE_URL` in every runner mode. With a shared network the port is the host's
 * proxy itself (EADDRINUSE): nothing to do.
 */
export async function forwardCredentialProxy(env: NodeJS.ProcessEnv, log: (message: string) => void): Promise<net.Server | undefined> {
  const socket = rawSetting(env, 'PINCER_CREDENTIAL_PROXY_SOCKET');
  if (!socket) return undefined;
  const port = proxyPort(env);
  if (port === undefined) return undefined;
  return forwardLoopback(port, socket, (m) => log(`cannot forward the credential proxy: ${m}`));
}

/**
 * The same for the host's OTLP relay (src/host/trace-relay.ts): the sandbox's spans — this runner's, the MCP server's,
 * the agent CLI's — go to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` on the sandbox's loopback, forwarded to the relay's socket.
 */
export async function forwardTraceRelay(env: NodeJS.ProcessEnv, log: (message: string) => void): Promise<net.Server | undefined> {
  const socket = rawSetting(env, 'PINCER_TRACE_RELAY_SOCKET');
  const port = loopbackPort(rawSetting(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'));
  if (!socket || port === undefined) return undefined;
  return forwardLoopback(port, socket, (m) => log(`cannot forward the trace relay: ${m}`));
}

/** Listen on 127.0.0.1:`port` and pipe each connection to the Unix socket `socket`; EADDRINUSE: the host's own port is here. */
async function forwardLoopback(port: number, socket: string, warn: (message: string) => void): Promise<net.Server | undefined> {
  const net = await import('node:net'); // only in a sandbox with its own network
  const server = net.createServer((client) => {
    const upstream = net.connect(socket);
    // Neither end keeps the runner alive: a request in flight is held by its client's own socket, and an idle
    // keep-alive connection (an exporter's, an SDK's) held a stopped runner until the host's grace ran out and it
    // was SIGKILLed, losing the spans of its last turn.
    client.unref();
    upstream.unref();
    client.pipe(upstream).pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
  });
  server.unref();
  return new Promise((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') warn(err.message);
      resolve(undefined);
    });
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function loopbackPort(value: string | undefined): number | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    return url.hostname === '127.0.0.1' && url.port ? Number(url.port) : undefined;
  } catch {
    return undefined; // not a URL: the exporter reports it
  }
}

/** The loopback port of the proxy's base URLs (its MCP relay's is the same). */
function proxyPort(env: NodeJS.ProcessEnv): number | undefined {
  for (const name of ['ANTHROPIC_BASE_URL', 'OPENAI_BASE_URL', 'PINCER_MCP_RELAY_URL']) {
    const value = env[name];
    if (!value) continue;
    try {
      const url = new URL(value);
      if (url.hostname === '127.0.0.1' && url.port) return Number(url.port);
    } catch {
      // not a URL: the provider reports it
    }
  }
  return undefined;
}
