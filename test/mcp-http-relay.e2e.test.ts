import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretsStore } from '../src/host/secrets.js';
import { claudeTestEnv, cleanupClaude, fakeAnthropic } from './support/claude.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { closeHttpMcpServers, digestOf, startHttpMcpServer } from './support/http-mcp-server.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { descendants, environOf } from './support/processes.js';
import { runCli } from './support/runner-harness.js';

/**
 * A user's Streamable HTTP MCP server with a credential header from the host's secrets store, through a real host
 * and the built-in runtime, as a plain process and in bubblewrap (whose sandbox has no network: the server on the
 * host's 127.0.0.1 is out of its reach but for the host's relay). The server gets the real token on every request;
 * the runner is given only the relay's address and its session's placeholder, so the token is in no session file,
 * log, process environment, model request or chat.
 */
const bwrapWorks = spawnSync('bwrap', ['--unshare-all', '--ro-bind', '/', '/', 'true']).status === 0;
const TOKEN = 'docs-pat-0c4f7a91e2b35d68';
const cli = (home: string, ...args: string[]) =>
  runCli([...args.slice(0, 2), '--home', home, ...args.slice(2)], { PATH: process.env.PATH, HOME: process.env.HOME });

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await closeFakeOpenAIs();
  await closeHttpMcpServers();
  expect(await cleanupClaude()).toBe(0);
});

function filesContaining(dir: string, needle: string, except: string[] = []): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => !except.includes(file) && fs.lstatSync(file).isFile() && fs.readFileSync(file).includes(needle));
}

describe("a user's HTTP MCP server through the host", { timeout: 120_000 }, () => {
  it.each(['process', 'bwrap'].filter((runner) => runner !== 'bwrap' || bwrapWorks))(
    '%s runner: the tool answers, the server gets the header secret, the runner never has it',
    async (runner) => {
      const upstream = await startHttpMcpServer(TOKEN);
      const fake = await startFakeOpenAI();
      fake.script({ call: 'mcp__docs__whoami', args: {} }, { text: 'asked the docs server' });
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
      new SecretsStore(home).set('DOCS_TOKEN', `Bearer ${TOKEN}`);
      const host = await startHost(
        { PINCER_RUNNER: runner, AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl, PINCER_MODEL_MAX_RETRIES: '0' },
        home,
      );
      expect((await cli(home, 'mcp-server', 'add', 'main', 'docs', '--url', upstream.url, '--header-secret', 'Authorization=DOCS_TOKEN')).status).toBe(0);

      const stream = host.stream('docs');
      const sent = (await host.request('POST', '/v1/conversations/docs/messages', { text: 'ask the docs' })).body as { sessionId: string };
      await waitForAnswer(stream);
      const runnerPid = host.runnerPids()[0]!;
      const environs = [runnerPid, ...descendants(runnerPid)].map(environOf);

      // The model got the tool's answer: the server saw the real token (its digest), over its own MCP session.
      const requests = fake.modelRequests().map((r) => JSON.stringify(r.body));
      expect(requests[1]).toContain(`token digest ${digestOf(TOKEN)}, session `);
      const seen = upstream.requests();
      expect(seen.length).toBeGreaterThanOrEqual(3);
      expect(new Set(seen.map((r) => r.authorization))).toEqual(new Set([`Bearer ${TOKEN}`]));

      // What the runner was given: the relay's address and a placeholder, no URL of the server and no token.
      // (in bubblewrap the runner is a child of bwrap, whose own environment is nearly empty)
      expect(environs.some((environ) => /PINCER_MCP_RELAY_URL=http:\/\/127\.0\.0\.1:\d+\/mcp\0/.test(environ))).toBe(true);
      for (const environ of environs) {
        expect(environ).not.toContain(TOKEN);
        expect(environ).not.toContain(upstream.url);
      }
      for (const request of requests) expect(request).not.toContain(TOKEN);
      expect(filesContaining(home, TOKEN, [path.join(home, 'secrets.json')])).toEqual([]);
      expect(host.stderr()).not.toContain(TOKEN);
      const config = JSON.parse(fs.readFileSync(path.join(host.sessionDir(sent.sessionId), 'config.json'), 'utf8')) as { mcpServers: unknown };
      expect(config.mcpServers).toEqual({ docs: { type: 'http', url: upstream.url, headers: { Authorization: { secret: 'DOCS_TOKEN' } } } });
      stream.close();
      await host.stop();
    },
  );
});

/** Each SDK-driven provider against its fake model server: a call to the docs server's tool, and what came back. */
const PROVIDERS = {
  claude: async () => {
    const fake = await fakeAnthropic();
    fake.script({ toolUse: { name: 'mcp__docs__whoami', input: {} } }, { text: 'asked the docs server' });
    return { env: claudeTestEnv(fake), toolResult: () => fake.modelRequests()[1]?.lastUserText ?? '' };
  },
  codex: async () => {
    const fake = await startFakeOpenAI();
    fake.script({ tool: 'whoami', server: 'docs', args: {} }, { text: 'asked the docs server' });
    const env = { AGENT_PROVIDER: 'codex', OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'test-key', CODEX_MODEL: fake.model, CODEX_MAX_RETRIES: '0' };
    return { env, toolResult: () => JSON.stringify(fake.modelRequests()[1]?.body ?? '') };
  },
  opencode: async () => {
    const fake = await startFakeOpenAI();
    fake.script({ tool: 'whoami', server: 'docs', args: {} }, { text: 'asked the docs server' });
    const env = { AGENT_PROVIDER: 'opencode', OPENCODE_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'test-key', OPENCODE_MODEL: fake.model };
    return { env, toolResult: () => JSON.stringify(fake.modelRequests()[1]?.body ?? '') };
  },
};

describe("each provider reaches a user's HTTP MCP server through the host", { timeout: 180_000 }, () => {
  const mode = bwrapWorks ? 'bwrap' : 'process';
  it.each(['claude', 'codex', 'opencode'] as const)(`%s (${mode} runner)`, async (provider) => {
    const upstream = await startHttpMcpServer(TOKEN);
    const setup = await PROVIDERS[provider]();
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    new SecretsStore(home).set('DOCS_TOKEN', `Bearer ${TOKEN}`);
    const host = await startHost({ ...setup.env, PINCER_RUNNER: mode, PINCER_PROVIDER_TIMEOUT_MS: '60000' }, home);
    expect((await cli(home, 'mcp-server', 'add', 'main', 'docs', '--url', upstream.url, '--header-secret', 'Authorization=DOCS_TOKEN')).status).toBe(0);
    const stream = host.stream('docs');
    await host.request('POST', '/v1/conversations/docs/messages', { text: 'ask the docs' });
    await waitForAnswer(stream);
    expect(setup.toolResult()).toContain(`token digest ${digestOf(TOKEN)}, session `);
    expect(new Set(upstream.requests().map((r) => r.authorization))).toEqual(new Set([`Bearer ${TOKEN}`]));
    const runnerPid = host.runnerPids()[0]!;
    for (const environ of [runnerPid, ...descendants(runnerPid)].map(environOf)) expect(environ).not.toContain(TOKEN);
    expect(filesContaining(home, TOKEN, [path.join(home, 'secrets.json')])).toEqual([]);
    stream.close();
    await host.stop();
  });
});

async function waitForAnswer(stream: ReturnType<Awaited<ReturnType<typeof startHost>>['stream']>): Promise<void> {
  const event = await stream.waitFor('the answer', (e) => (e.event === 'chat' && e.data.text === 'asked the docs server') || e.event === 'notice', 90_000);
  expect(event.data).toMatchObject({ text: 'asked the docs server' });
}
