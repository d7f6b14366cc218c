import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretsStore } from '../src/host/secrets.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { runCli } from './support/runner-harness.js';

/**
 * A user's MCP server whose environment refers to the host's secrets store, through a real host and the built-in
 * runtime, as a plain process and in the default sandbox (bubblewrap): the server gets the value; the session folder,
 * the host's home (logs, central DB), the runner's environment and command line, the model's requests and the chat
 * never do. In the sandbox the server runs inside it, with the session at /workspace and nothing of the host's home.
 */
const PROBE = 'test/support/misbehaving-mcp-server.mjs';
/** Where the test's server script is for the runner: this checkout, which a sandbox sees read-only at /app. */
const probeFor = (runner: string): string => (runner === 'bwrap' ? `/app/${PROBE}` : path.resolve(PROBE));
const bwrapWorks = spawnSync('bwrap', ['--unshare-all', '--ro-bind', '/', '/', 'true']).status === 0;
const SECRET = 'ghp_pincer-test-secret-7f3a9c21d4e8';
const cli = (home: string, ...args: string[]) =>
  runCli([...args.slice(0, 2), '--home', home, ...args.slice(2)], { PATH: process.env.PATH, HOME: process.env.HOME });

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await closeFakeOpenAIs();
});

/** Every file under `dir` (not following links) whose bytes contain `needle`, except `except`. */
function filesContaining(dir: string, needle: string, except: string[] = []): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const file = path.join(entry.parentPath, entry.name);
    if (!entry.isFile() || except.includes(file)) continue;
    if (fs.readFileSync(file).includes(needle)) found.push(file);
  }
  return found;
}

describe("secrets of a user's MCP server", { timeout: 120_000 }, () => {
  it.each(['process', 'bwrap'].filter((runner) => runner !== 'bwrap' || bwrapWorks))(
    'reach only the server process (%s runner): never config.json, the home, the runner environment or command line, the model',
    async (runner) => {
      const fake = await startFakeOpenAI();
      const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
      fake.script(
        { call: 'mcp__probe__env_digest', args: { name: 'PROBE_TOKEN' } },
        { call: 'mcp__nokey__env_digest', args: { name: 'PROBE_TOKEN' } },
        { call: 'mcp__probe__where', args: {} },
        { call: 'mcp__probe__read_file', args: { path: path.join(home, 'outside.txt') } },
        { text: 'checked' },
      );
      new SecretsStore(home).set('PROBE_TOKEN', SECRET);
      fs.writeFileSync(path.join(home, 'outside.txt'), 'a file of the host, outside the session');
      const host = await startHost(
        { PINCER_RUNNER: runner, AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl, PINCER_MODEL_MAX_RETRIES: '0' },
        home,
      );
      const node = runner === 'bwrap' ? 'node' : process.execPath;
      expect((await cli(home, 'mcp-server', 'add', 'main', 'probe', '--env-secret', 'PROBE_TOKEN=PROBE_TOKEN', '--', node, probeFor(runner))).status).toBe(0);
      // A reference to a secret the store does not have: that server is left out, saying which secret.
      expect((await cli(home, 'mcp-server', 'add', 'main', 'nokey', '--env-secret', 'PROBE_TOKEN=NOT_SET', '--', node, probeFor(runner))).status).toBe(0);

      const stream = host.stream('probe');
      const sent = (await host.request('POST', '/v1/conversations/probe/messages', { text: 'check the token' })).body as { sessionId: string };
      await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'checked');

      // The server had the value (its digest), and the process that started it — the runner — had it neither in its
      // environment nor on its command line.
      const requests = fake.modelRequests().map((r) => JSON.stringify(r.body));
      const digest = createHash('sha256').update(SECRET).digest('hex');
      const probeResult = /\{\\"name\\":\\"PROBE_TOKEN\\",\\"set\\":true[^}]*\}/.exec(requests[1] ?? '')?.[0].replaceAll('\\"', '"');
      expect(JSON.parse(probeResult ?? '{}')).toEqual({ name: 'PROBE_TOKEN', set: true, sha256: digest, parentEnviron: false, parentCmdline: false });
      // The server with a missing secret was never started: the model's second call got no digest.
      expect(requests[2]?.split(digest).length).toBe(2);
      expect(host.stderr()).not.toContain(SECRET);
      // Where the server runs: in the sandbox, beside the session (/workspace) and blind to the host's home.
      const where = JSON.parse(/\{\\"cwd\\"[^}]*\}/.exec(requests[3] ?? '')?.[0].replaceAll('\\"', '"') ?? '{}') as { cwd?: string; sessionDb?: boolean };
      if (runner === 'bwrap') {
        expect(where).toMatchObject({ cwd: '/workspace', sessionDb: true });
        expect(requests[4]).toContain(`cannot read ${path.join(home, 'outside.txt')}: ENOENT`);
      } else {
        expect(requests[4]).toContain('a file of the host, outside the session'); // a plain process reads what its user may
      }

      // Nothing the agent, a log or the central DB holds has the value: only the secrets store.
      expect(filesContaining(home, SECRET, [path.join(home, 'secrets.json')])).toEqual([]);
      for (const request of requests) expect(request).not.toContain(SECRET);
      const config = JSON.parse(fs.readFileSync(path.join(host.sessionDir(sent.sessionId), 'config.json'), 'utf8')) as {
        mcpServers: Record<string, { env: unknown }>;
      };
      expect(config.mcpServers.probe!.env).toEqual({ PROBE_TOKEN: { secret: 'PROBE_TOKEN' } });
      const logText = fs.readFileSync(path.join(home, 'logs', `${sent.sessionId}.log`), 'utf8');
      expect(logText).toContain('MCP server nokey left out: no secret named "NOT_SET" in the host\'s secrets store');
      await host.stop();
    },
  );
});
