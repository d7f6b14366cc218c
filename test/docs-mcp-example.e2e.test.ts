import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { PROCESS_RUNNER, startHost, stopAllHosts } from './support/host-harness.js';
import { BUILT_CLI } from './support/runner-harness.js';

/**
 * docs/providers.md "Your own MCP servers" runs as written: its shell block is pasted into bash against a real host,
 * and the built-in runtime's model (the fake server) then uses the filesystem server's tools on the agent's folder.
 * Only what a test must change is changed: `pincer` is the built CLI, and `npx -y <package>` runs the registry's
 * package installed here as a dev dependency (a test does not download). The runner is a plain process: that `npx`
 * lives in this checkout, outside what a sandbox sees.
 */
const ROOT = path.resolve(import.meta.dirname, '..');
const FILESYSTEM = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');

const dirs: string[] = [];
afterEach(async () => {
  // on a failure too: the host and its runners stopped, the fake model closed, the shim's folder removed
  try {
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  } finally {
    await closeFakeOpenAIs();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  }
});

function sectionBlock(file: string, heading: string): string {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const start = text.indexOf(`\n## ${heading}\n`);
  expect(start).toBeGreaterThan(0);
  const section = text.slice(start, text.indexOf('\n## ', start + 1));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks).toHaveLength(1);
  return blocks[0]!;
}

/** `npx -y <package> args…` for the one package this test has installed; anything else fails loudly. */
function npxShim(dir: string): void {
  const script = `#!/bin/sh
if [ "$1" = "-y" ] && [ "$2" = "@modelcontextprotocol/server-filesystem" ]; then shift 2; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(FILESYSTEM)} "$@"; fi
echo "test npx: only @modelcontextprotocol/server-filesystem is installed here (got: $*)" >&2; exit 1
`;
  fs.writeFileSync(path.join(dir, 'npx'), script, { mode: 0o755 });
}

describe('docs/providers.md: your own MCP servers', { timeout: 180_000 }, () => {
  it('the filesystem server example, as written, gives the agent the tools over its own folder', async () => {
    const block = sectionBlock('docs/providers.md', 'Your own MCP servers');
    expect(block).toContain('pincer mcp-server add main files');
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-npx-'));
    dirs.push(bin);
    npxShim(bin);
    const PATH = `${bin}${path.delimiter}${process.env.PATH ?? ''}`;

    const fake = await startFakeOpenAI();
    fake.script(
      { call: 'mcp__files__write_file', args: { path: 'notes.txt', content: 'written through the filesystem server' } },
      { call: 'mcp__files__read_text_file', args: { path: 'notes.txt' } },
      { call: 'mcp__files__read_text_file', args: { path: '../session.db' } },
      { text: 'The note is written.' },
    );
    const host = await startHost({
      ...PROCESS_RUNNER,
      PATH,
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: fake.baseUrl,
      PINCER_MODEL_MAX_RETRIES: '0',
    });
    const shell = spawnSync(
      'bash',
      ['-euo', 'pipefail', '-c', `pincer() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BUILT_CLI)} "$@"; }\n${block}`],
      {
        env: { PATH, HOME: process.env.HOME, PINCER_HOME: host.home, TZ: 'UTC' },
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect({ status: shell.status, stderr: shell.stderr }).toMatchObject({ status: 0 });
    expect(shell.stdout).toBe('main\tfiles\tstdio npx -y @modelcontextprotocol/server-filesystem . (cwd .)\n');
    // pincer doctor only checks it; with --mcp-start it starts it once and counts its tools.
    const doctor = (...args: string[]) =>
      spawnSync(process.execPath, [BUILT_CLI, 'doctor', ...args], {
        env: { PATH, HOME: process.env.HOME, PINCER_HOME: host.home, TZ: 'UTC' },
        encoding: 'utf8',
        timeout: 60_000,
      }).stdout;
    const checked = doctor();
    expect(checked).toContain('\n  MCP server files: stdio npx -y @modelcontextprotocol/server-filesystem . (cwd .)\n');
    expect(checked).toContain('\n  (MCP servers not started: pincer doctor --mcp-start starts each once, outside any sandbox)\n');
    expect(doctor('--mcp-start')).toMatch(
      /\n {2}MCP server files: stdio npx -y @modelcontextprotocol\/server-filesystem \. \(cwd \.\) — starts, 14 tools \(\d+\.\d s\)\n/,
    );

    const stream = host.stream('docs');
    const sent = (await host.request('POST', '/v1/conversations/docs/messages', { text: 'write a note' })).body as { sessionId: string };
    const reply = await stream.waitFor('the answer', (e) => (e.event === 'chat' && e.data.text === 'The note is written.') || e.event === 'notice', 120_000);
    expect(reply.data.text).toBe('The note is written.');
    // The server wrote into the agent's folder, and read it back to the model; outside that folder it refused.
    expect(fs.readFileSync(path.join(host.sessionDir(sent.sessionId), 'agent', 'notes.txt'), 'utf8')).toBe('written through the filesystem server');
    const requests = fake.modelRequests().map((r) => JSON.stringify(r.body));
    expect(requests[2]).toContain('written through the filesystem server');
    expect(requests[3]).toMatch(/Access denied - path outside allowed directories/);
    await host.stop();
  });
});
