import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkMcpServers } from '../src/doctor/mcp-servers.js';
import { startMcpServers } from '../src/doctor/mcp-start.js';
import { MCP_SETTING_DEFAULTS } from '../src/providers/mcp-settings.js';
import { descendants } from './support/processes.js';
import { waitFor } from './support/wait.js';

/** `pincer doctor` on an agent group's own MCP servers: what would keep each from starting, and each started once. */
describe("doctor's check of a group's MCP servers", () => {
  const env = { PATH: process.env.PATH };
  it('finds a missing secret, a command not on PATH, and nothing wrong with a good server', () => {
    const checks = checkMcpServers(
      {
        good: { command: 'node', args: ['server.js'] },
        nokey: { command: 'node', env: { TOKEN: { secret: 'GITHUB_TOKEN' } } },
        nocommand: { command: 'no-such-mcp-server-binary' },
        web: { type: 'http', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: { secret: 'SET_ONE' } } },
      },
      ['SET_ONE'],
      env,
    );
    expect(checks).toEqual([
      { name: 'good', what: 'stdio node server.js', problems: [] },
      {
        name: 'nokey',
        what: 'stdio node (env: TOKEN)',
        problems: ['no secret named "GITHUB_TOKEN" in the host\'s secrets store (pincer secret set GITHUB_TOKEN)'],
      },
      { name: 'nocommand', what: 'stdio no-such-mcp-server-binary', problems: ['command "no-such-mcp-server-binary" not found on PATH'] },
      { name: 'web', what: 'http http://127.0.0.1:9/mcp (headers: Authorization)', problems: [] },
    ]);
  });

  it('says why when the secrets store cannot be read', () => {
    const [check] = checkMcpServers({ gh: { command: 'node', env: { T: { secret: 'GH' } } } }, { error: 'secrets file x has mode 0644' }, env);
    expect(check!.problems).toEqual(['its secrets cannot be read: secrets file x has mode 0644']);
  });
});

describe("doctor's start of a group's MCP servers", { timeout: 60_000 }, () => {
  const MISBEHAVING = path.resolve('test/support/misbehaving-mcp-server.mjs');
  const MEMORY = path.resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js');

  it('says whether each starts and how many tools it lists; a crash, a hang and a missing secret each say why; nothing is left running', async () => {
    const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-doctor-mcp-'));
    const results = await startMcpServers(
      {
        agentDir,
        servers: {
          memory: { command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: 'memory.jsonl' } },
          odd: { command: process.execPath, args: [MISBEHAVING], env: { TOKEN: { secret: 'ODD_TOKEN' } } },
          crash: { command: process.execPath, args: [MISBEHAVING], env: { MISBEHAVE: 'crash-at-start' } },
          hang: { command: process.execPath, args: [MISBEHAVING], env: { MISBEHAVE: 'hang-at-start' } },
          nokey: { command: process.execPath, args: [MISBEHAVING], env: { TOKEN: { secret: 'MISSING' } } },
        },
      },
      // a hang is cut at the start deadline: long enough for a loaded machine to start the others
      {
        env: { PATH: process.env.PATH ?? '' },
        secret: (name) => (name === 'ODD_TOKEN' ? 'odd-value' : undefined),
        settings: { ...MCP_SETTING_DEFAULTS, startMs: 15_000 },
      },
    );
    expect(Object.fromEntries([...results].map(([name, r]) => [name, r.ok ? { ok: true, tools: r.tools } : r]))).toEqual({
      memory: { ok: true, tools: 9 },
      odd: { ok: true, tools: expect.any(Number) },
      crash: { ok: false, error: 'it exited before it was ready (its stderr: "misbehaving: cannot open /nonexistent/state.db")' },
      hang: { ok: false, error: 'did not list its tools within 15 s (its stderr: "misbehaving: waiting for a lock that never comes")' },
      nokey: { ok: false, error: 'no secret named "MISSING" in the host\'s secrets store' },
    });
    const odd = results.get('odd');
    expect(odd?.ok && odd.tools).toBeGreaterThan(3);
    const servers = () =>
      descendants(process.pid).filter((pid) => {
        try {
          return /misbehaving-mcp-server|server-memory/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
        } catch {
          return false; // gone meanwhile
        }
      });
    await waitFor('every server stopped', () => servers().length === 0, { timeoutMs: 20_000 });
  });
});
