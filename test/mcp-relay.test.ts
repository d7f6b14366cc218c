import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpServers } from '../src/db/mcp-servers.js';
import { CredentialProxy } from '../src/host/credential-proxy.js';
import { mcpRelayTarget, mcpSecretValues } from '../src/host/mcp-servers.js';
import { relayedServerName } from '../src/host/mcp-relay.js';
import { SecretsStore } from '../src/host/secrets.js';
import { mcpRelayOf, resolveUserMcpServers } from '../src/runner/mcp-servers.js';
import { MCP_SETTING_DEFAULTS } from '../src/providers/mcp-settings.js';
import { McpConnections } from '../src/providers/pincer/mcp-tools.js';
import { createLogger } from '../src/shared/log.js';
import { closeHttpMcpServers, digestOf, startHttpMcpServer } from './support/http-mcp-server.js';

/**
 * The host's relay of HTTP MCP servers (src/host/mcp-relay.ts) in the credential proxy: a real proxy, the MCP SDK's
 * client as a runner's provider uses it, and a real Streamable HTTP server that wants a bearer token. The client knows
 * only the relay's address, the server's name and its session's placeholder; the server gets the real token.
 */
const TOKEN = 'docs-token-5b0e93c1d7';
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await closeHttpMcpServers();
});

function secretsWith(values: Record<string, string>): SecretsStore {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-relay-'));
  cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
  const store = new SecretsStore(home);
  for (const [name, value] of Object.entries(values)) store.set(name, value);
  return store;
}

async function relayFor(servers: McpServers, secrets: SecretsStore): Promise<{ proxy: CredentialProxy; env: NodeJS.ProcessEnv }> {
  const proxy = CredentialProxy.fromEnvironment(
    { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
    createLogger('test', () => undefined),
  )!;
  proxy.relayMcpWith((sessionId, name) => {
    expect(sessionId).toBe('s-1');
    return mcpRelayTarget(servers, name, secrets);
  });
  await proxy.start();
  cleanups.push(() => proxy.stop());
  return { proxy, env: proxy.runnerEnv('s-1', {}) };
}

async function connect(url: string, headers: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'relay-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  cleanups.push(() => client.close());
  return client;
}

/** A tools/list POST with the path exactly as written (fetch would resolve `%2e%2e` segments itself). */
function post(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        hostname,
        port,
        path: url.slice(url.indexOf('/mcp')),
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('the MCP relay', () => {
  it("forwards a session's HTTP server with the host's headers; the runner's config names only the relay and the placeholder", async () => {
    const upstream = await startHttpMcpServer(TOKEN);
    const servers: McpServers = { docs: { type: 'http', url: upstream.url, headers: { Authorization: { secret: 'DOCS_TOKEN' } } } };
    const { env } = await relayFor(servers, secretsWith({ DOCS_TOKEN: `Bearer ${TOKEN}` }));
    expect(env.PINCER_MCP_RELAY_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);

    // as the runner resolves it: no secret asked for, none on its stdin
    const resolved = resolveUserMcpServers(servers, { agentDir: '/tmp', env, secret: () => expect.unreachable('no secret is read'), ...mcpRelayOf(env) });
    expect(resolved).toEqual({
      servers: {
        docs: {
          type: 'http',
          url: `${env.PINCER_MCP_RELAY_URL}/docs`,
          headers: { Authorization: `Bearer ${env.PINCER_MCP_RELAY_TOKEN}` },
          secretKeys: ['Authorization'],
        },
      },
      leftOut: [],
    });
    const docs = resolved.servers.docs!;
    if (docs.type !== 'http') throw new Error('an http server');

    const client = await connect(docs.url, docs.headers);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['whoami']);
    const result = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: { text: string }[] };
    expect(result.content[0]!.text).toMatch(new RegExp(`^token digest ${digestOf(TOKEN)}, session [0-9a-f-]{36}$`));
    // every request reached it with the real token and the session id it gave (none with the placeholder)
    const seen = upstream.requests();
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(new Set(seen.map((r) => r.authorization))).toEqual(new Set([`Bearer ${TOKEN}`]));
    expect(seen.slice(1).every((r) => r.sessionId !== undefined)).toBe(true);
  });

  it.each([
    {
      what: 'no placeholder',
      url: (env: NodeJS.ProcessEnv) => `${env.PINCER_MCP_RELAY_URL}/docs`,
      token: undefined,
      status: 401,
      says: 'unknown or revoked placeholder',
    },
    {
      what: 'a wrong placeholder',
      url: (env: NodeJS.ProcessEnv) => `${env.PINCER_MCP_RELAY_URL}/docs`,
      token: 'pincer-placeholder-nope',
      status: 401,
      says: 'unknown or revoked',
    },
    {
      what: 'a name the session has not',
      url: (env: NodeJS.ProcessEnv) => `${env.PINCER_MCP_RELAY_URL}/elsewhere`,
      token: 'own',
      status: 404,
      says: 'no HTTP MCP server "elsewhere"',
    },
    {
      what: 'a stdio server by name',
      url: (env: NodeJS.ProcessEnv) => `${env.PINCER_MCP_RELAY_URL}/memory`,
      token: 'own',
      status: 404,
      says: '(it has: docs, nokey)',
    },
    {
      what: 'a path below a name',
      url: (env: NodeJS.ProcessEnv) => `${env.PINCER_MCP_RELAY_URL}/docs/%2e%2e/admin`,
      token: 'own',
      status: 404,
      says: 'no MCP server at',
    },
    {
      what: 'a secret the store lacks',
      url: (env: NodeJS.ProcessEnv) => `${env.PINCER_MCP_RELAY_URL}/nokey`,
      token: 'own',
      status: 503,
      says: 'needs "MISSING"',
    },
  ])('refuses $what ($status), as a JSON-RPC error', async ({ url, token, status, says }) => {
    const upstream = await startHttpMcpServer(TOKEN);
    const servers: McpServers = {
      docs: { type: 'http', url: upstream.url, headers: { Authorization: `Bearer ${TOKEN}` } },
      nokey: { type: 'http', url: upstream.url, headers: { Authorization: { secret: 'MISSING' } } },
      memory: { command: 'true' },
    };
    const { env } = await relayFor(servers, secretsWith({}));
    const bearer = token === 'own' ? env.PINCER_MCP_RELAY_TOKEN : token;
    const res = await post(url(env), bearer ? { authorization: `Bearer ${bearer}` } : {});
    expect(res.status).toBe(status);
    expect((JSON.parse(res.body) as { error: { message: string } }).error.message).toContain(says);
    expect(upstream.requests()).toEqual([]);
  });

  it("stops serving a session's servers when its placeholder is revoked (its runner stopped)", async () => {
    const upstream = await startHttpMcpServer(TOKEN);
    const { proxy, env } = await relayFor({ docs: { type: 'http', url: upstream.url, headers: { Authorization: `Bearer ${TOKEN}` } } }, secretsWith({}));
    const headers = { Authorization: `Bearer ${env.PINCER_MCP_RELAY_TOKEN}` };
    await connect(`${env.PINCER_MCP_RELAY_URL}/docs`, headers);
    proxy.revoke('s-1');
    await expect(connect(`${env.PINCER_MCP_RELAY_URL}/docs`, headers)).rejects.toThrow(/unknown or revoked placeholder/);
  });

  it("the built-in runtime's client: a server whose secret the store lacks could not start, and the notice says which", async () => {
    const servers: McpServers = { nokey: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: { secret: 'MISSING' } } } };
    const { env } = await relayFor(servers, secretsWith({}));
    const resolved = resolveUserMcpServers(servers, { agentDir: '/tmp', env, secret: () => undefined, ...mcpRelayOf(env) });
    const connections = await McpConnections.connect(
      resolved.servers,
      {},
      { settings: MCP_SETTING_DEFAULTS, maxOutputChars: 10_000, log: createLogger('test', () => undefined) },
    );
    cleanups.push(() => connections.close());
    expect(connections.tools()).toEqual([]);
    expect(connections.takeNotices()).toEqual([
      expect.stringMatching(/^The MCP server "nokey" could not start: .*needs \\?"MISSING\\?", which the host's secrets store does not have/),
    ]);
  });

  it('a redirect is not passed on (the client would follow it past the relay): a 502 saying which URL to configure', async () => {
    const mover = http.createServer((req, res) => req.resume().on('end', () => res.writeHead(307, { location: '/mcp/' }).end()));
    await new Promise<void>((resolve) => mover.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      mover.closeAllConnections();
      mover.close();
    });
    const moved = `http://127.0.0.1:${(mover.address() as { port: number }).port}/mcp`;
    const { env } = await relayFor({ docs: { type: 'http', url: moved } }, secretsWith({}));
    const res = await post(`${env.PINCER_MCP_RELAY_URL}/docs`, { authorization: `Bearer ${env.PINCER_MCP_RELAY_TOKEN}` });
    expect(res.status).toBe(502);
    expect((JSON.parse(res.body) as { error: { message: string } }).error.message).toBe(
      `Pincer MCP relay: the MCP server docs redirects (307) to ${moved}/: configure that URL for it instead`,
    );
  });

  it('an unreachable server is a 502 naming it', async () => {
    const { env } = await relayFor({ docs: { type: 'http', url: 'http://127.0.0.1:9/mcp' } }, secretsWith({}));
    await expect(connect(`${env.PINCER_MCP_RELAY_URL}/docs`, { Authorization: `Bearer ${env.PINCER_MCP_RELAY_TOKEN}` })).rejects.toThrow(
      /the MCP server docs at http:\/\/127\.0\.0\.1:9 is unreachable from the host/,
    );
  });
});

describe('what the host hands a runner with the relay', () => {
  const config = {
    mcpServers: {
      docs: { type: 'http' as const, url: 'https://mcp.example.com/mcp', headers: { Authorization: { secret: 'DOCS_TOKEN' } } },
      github: { command: 'npx', env: { GITHUB_TOKEN: { secret: 'GH' } } },
    },
  };
  it("an HTTP server's secrets stay on the host; a stdio server's go on the runner's stdin as before", () => {
    const secrets = secretsWith({ DOCS_TOKEN: 'docs-secret', GH: 'gh-secret' });
    const log = createLogger('test', () => undefined);
    expect(mcpSecretValues(config, secrets, log, true)).toEqual({ GH: 'gh-secret' });
    expect(mcpSecretValues(config, secrets, log, false)).toEqual({ DOCS_TOKEN: 'docs-secret', GH: 'gh-secret' });
  });

  it('relay paths are one server name', () => {
    expect(relayedServerName('/mcp/docs')).toBe('docs');
    expect(relayedServerName('/mcp/my_docs-2')).toBe('my_docs-2');
    for (const url of ['/mcp', '/mcp/', '/mcp/docs/x', '/mcp/docs?x=1', '/mcp/%64ocs', '/mcp/../openai']) expect(relayedServerName(url)).toBeUndefined();
  });
});
