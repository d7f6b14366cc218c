import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { PROCESS_RUNNER, startHost, stopAllHosts } from './support/host-harness.js';
import { runCli } from './support/runner-harness.js';

/**
 * The user's own MCP servers of an agent group, through a real host: `pincer mcp-server add|list|remove`, the admin
 * HTTP route, and the built-in runtime calling a registry server's tool against the fake model server, with a server
 * that cannot start left out and named in the chat.
 */
const MISBEHAVING = path.resolve('test/support/misbehaving-mcp-server.mjs');
const MEMORY = path.resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js');
/** `pincer <command> <subcommand> --home <home> …` (before any `--`, which starts a server's command) */
const cli = (home: string, ...args: string[]) =>
  runCli([...args.slice(0, 2), '--home', home, ...args.slice(2)], { PATH: process.env.PATH, HOME: process.env.HOME });

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await closeFakeOpenAIs();
});

describe("an agent group's own MCP servers", { timeout: 120_000 }, () => {
  it('pincer mcp-server add, list and remove; bad input gets one clear line and changes nothing', async () => {
    const host = await startHost();
    const added = await cli(
      host.home,
      'mcp-server',
      'add',
      'main',
      'memory',
      '--env',
      'MEMORY_FILE_PATH=memory.jsonl',
      '--env-secret',
      'API_TOKEN=MEMORY_TOKEN',
      '--',
      'npx',
      '-y',
      '@modelcontextprotocol/server-memory',
    );
    expect(added).toMatchObject({ status: 0 });
    expect(added.stderr).toContain('agent group main: MCP server "memory" stdio npx -y @modelcontextprotocol/server-memory (env: MEMORY_FILE_PATH, API_TOKEN)');
    expect(
      (await cli(host.home, 'mcp-server', 'add', 'main', 'docs', '--url', 'http://127.0.0.1:9/mcp', '--header-secret', 'Authorization=DOCS_TOKEN')).status,
    ).toBe(0);

    const listed = await cli(host.home, 'mcp-server', 'list');
    expect(listed.stdout).toBe(
      'main\tmemory\tstdio npx -y @modelcontextprotocol/server-memory (env: MEMORY_FILE_PATH, API_TOKEN)\nmain\tdocs\thttp http://127.0.0.1:9/mcp (headers: Authorization)\n',
    );
    const json = JSON.parse((await cli(host.home, 'mcp-server', 'list', 'main', '--json')).stdout) as Record<string, unknown>;
    expect(json).toEqual({
      main: {
        memory: {
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-memory'],
          env: { MEMORY_FILE_PATH: 'memory.jsonl', API_TOKEN: { secret: 'MEMORY_TOKEN' } },
        },
        docs: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: { secret: 'DOCS_TOKEN' } } },
      },
    });

    const refusals: [string[], string][] = [
      [['add', 'main', 'pincer', '--', 'node', 'x.js'], `"pincer" is the name of Pincer's own server; choose another`],
      [['add', 'main', 'memory', '--', 'node', 'x.js'], 'agent group main already has an MCP server "memory" (remove it first, or pass --replace)'],
      [['add', 'nope', 'x', '--', 'node'], 'unknown agent group "nope" (known: main)'],
      [['add', 'main', 'x'], "give the server's command after --"],
      [['add', 'main', 'x', '--url', 'ftp://example.invalid/'], 'url must be an http(s) URL'],
      [['add', 'main', 'x', '--env', 'NOVALUE', '--', 'node'], '--env: expected NAME=value, got "NOVALUE"'],
      [['add', 'main', 'bad__name', '--', 'node'], 'a server name starts with a letter'],
      [['remove', 'main', 'ghost'], 'agent group main has no MCP server "ghost" (it has: memory, docs)'],
    ];
    for (const [args, message] of refusals) {
      const result = await cli(host.home, 'mcp-server', ...args);
      expect({ args, status: result.status }).toEqual({ args, status: 2 });
      expect(result.stderr).toContain(message);
    }
    expect((await cli(host.home, 'mcp-server', 'list')).stdout).toBe(listed.stdout);

    // pincer doctor shows each server of the group and what would keep it from starting.
    const doctor = await runCli(['doctor', '--home', host.home], { PATH: process.env.PATH, HOME: process.env.HOME });
    expect(doctor.stdout).toContain('✗ MCP server memory: stdio npx -y @modelcontextprotocol/server-memory (env: MEMORY_FILE_PATH, API_TOKEN)');
    expect(doctor.stdout).toContain(`    ! no secret named "MEMORY_TOKEN" in the host's secrets store (pincer secret set MEMORY_TOKEN)`);
    expect(doctor.stdout).toContain('✗ MCP server docs: http http://127.0.0.1:9/mcp (headers: Authorization)');

    expect((await cli(host.home, 'mcp-server', 'remove', 'main', 'docs')).status).toBe(0);
    expect((await cli(host.home, 'mcp-server', 'remove', 'main', 'memory')).status).toBe(0);
    expect((await cli(host.home, 'mcp-server', 'list')).stdout).toBe("main\t(no MCP servers besides Pincer's)\n");
    await host.stop();
  });

  it('GET and PUT /v1/groups/<group>/mcp-servers: admin only, validated, the whole list', async () => {
    const host = await startHost();
    const servers = { memory: { command: 'node', args: [MEMORY], env: { MEMORY_FILE_PATH: 'memory.jsonl' } } };
    const put = await host.request('PUT', '/v1/groups/main/mcp-servers', { mcpServers: servers });
    const described = { memory: `stdio node ${MEMORY} (env: MEMORY_FILE_PATH)` };
    expect(put).toEqual({ status: 200, body: { group: 'main', mcpServers: servers, described } });
    expect((await host.request('GET', '/v1/groups/main/mcp-servers')).body).toEqual({ group: 'main', mcpServers: servers, described });

    const bad = await host.request('PUT', '/v1/groups/main/mcp-servers', { mcpServers: { pincer: { command: 'node' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain(`"pincer" is the name of Pincer's own server`);
    expect((await host.request('PUT', '/v1/groups/main/mcp-servers', { servers })).status).toBe(400);
    expect((await host.request('GET', '/v1/groups/nope/mcp-servers')).status).toBe(404);

    const made = await cli(host.home, 'token', 'create', 'bridge', '--conversation', 'c1');
    expect(made.status).toBe(0);
    const scoped = made.stdout.trim();
    for (const method of ['GET', 'PUT']) {
      const refused = await host.request(method, '/v1/groups/main/mcp-servers', method === 'PUT' ? { mcpServers: {} } : undefined, { token: scoped });
      expect({ method, status: refused.status, body: refused.body }).toMatchObject({ method, status: 403 });
    }
    expect((await host.request('GET', '/v1/groups/main/mcp-servers')).body).toEqual({ group: 'main', mcpServers: servers, described });
    await host.stop();
  });

  it('the built-in runtime calls a registry server of the group; a server that cannot start is named in the chat', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      { call: 'mcp__memory__create_entities', args: { entities: [{ name: 'Ada', entityType: 'person', observations: ['drinks green tea'] }] } },
      { call: 'mcp__memory__search_nodes', args: { query: 'tea' } },
      { text: 'Ada drinks green tea.' },
    );
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    // the group's servers are scripts of this checkout (test/support), outside what a sandbox sees
    const host = await startHost(
      { ...PROCESS_RUNNER, AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl, PINCER_MODEL_MAX_RETRIES: '0' },
      home,
    );
    const memoryFile = path.join(home, 'memory.jsonl');
    expect((await cli(home, 'mcp-server', 'add', 'main', 'memory', '--env', `MEMORY_FILE_PATH=${memoryFile}`, '--', process.execPath, MEMORY)).status).toBe(0);
    expect((await cli(home, 'mcp-server', 'add', 'main', 'broken', '--env', 'MISBEHAVE=crash-at-start', '--', process.execPath, MISBEHAVING)).status).toBe(0);

    const stream = host.stream('tea');
    const sent = (await host.request('POST', '/v1/conversations/tea/messages', { text: 'remember what Ada drinks' })).body as { sessionId: string };
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'Ada drinks green tea.');
    const chats = stream.events.filter((e) => e.event === 'chat').map((e) => e.data.text);
    expect(chats).toEqual([
      'The MCP server "broken" could not start: it exited before it was ready (its stderr: "misbehaving: cannot open /nonexistent/state.db"). This turn goes on without its tools.',
      'Ada drinks green tea.',
    ]);
    // The model got the server's answer; the server wrote where it was told.
    const requests = fake.modelRequests().map((r) => JSON.stringify(r.body));
    expect(requests[2]).toContain('drinks green tea');
    expect(fs.readFileSync(memoryFile, 'utf8')).toContain('Ada');
    // Published into the session's config.json as configured (references, never values).
    const config = JSON.parse(fs.readFileSync(path.join(host.sessionDir(sent.sessionId), 'config.json'), 'utf8')) as { mcpServers: Record<string, unknown> };
    expect(Object.keys(config.mcpServers)).toEqual(['memory', 'broken']);
    await host.stop();
  });
});
