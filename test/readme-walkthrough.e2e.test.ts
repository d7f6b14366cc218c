/**
 * The README's Getting Started runs as written: the chat with the mock (piped here; the terminal itself is tested in
 * chat-terminal.e2e.test.ts) and the HTTP API block, pasted into bash in a fresh home. Only what a test must change is
 * changed: `node bin/pincer.js` is the built CLI, and port 8080 a free port. The HTTP block runs twice in a row, as a
 * reader trying it again would.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const homes: string[] = [];

afterEach(() => {
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

/** The shell blocks of the README's Getting Started, in order. */
function gettingStartedBlocks(): string[] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Getting started'), readme.indexOf('\n## ', readme.indexOf('## Getting started') + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('README Getting Started', () => {
  it('runs top to bottom in a fresh home', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-readme-'));
    homes.push(home);
    const cwd = fs.mkdtempSync(path.join(home, 'work-'));
    const env = { PATH: process.env.PATH, HOME: home, TZ: 'UTC', CLAUDE_CONFIG_DIR: path.join(home, 'no-claude-login') };
    const blocks = gettingStartedBlocks();
    expect(blocks).toHaveLength(3);
    expect(blocks[0]).toBe('npm ci\nnode bin/pincer.js chat\n');

    // 1. the mock chat (typed lines come from a pipe)
    const chat = spawnSync(process.execPath, [BUILT_CLI, 'chat'], { cwd, env, input: 'hello\n', encoding: 'utf8', timeout: 60_000 });
    expect(chat.status).toBe(0);
    expect(chat.stdout).toMatch(/^agent> echo: <context timezone="UTC"\/>\n<messages>\n<message id="1" sender="[^"]+" time="[^"]+">hello<\/message>/);
    expect(fs.existsSync(path.join(home, '.pincer', 'sessions', 'chat', 'session.db'))).toBe(true);

    // 4. the HTTP API block, as written, twice: the first run's host is stopped, so the second finds the port free
    for (let run = 1; run <= 2; run++) {
      const port = await freePort();
      const script = blocks[2]!.replaceAll('node bin/pincer.js', `node ${BUILT_CLI}`).replaceAll('8080', String(port));
      const api = spawnSync('bash', ['-c', `set -m\n${script}\nwait`], { cwd, env, encoding: 'utf8', timeout: 120_000 });
      expect(api.status, `run ${run}: ${api.stderr}`).toBe(0);
      const lines = api.stdout.trim().split('\n');
      expect(lines[0]).toBe('{"ok":true}');
      expect(lines[1]).toMatch(/^\{"sessionId":"s-[^"]+","id":"[^"]+","seq":\d+\}$/);
      expect(lines[2]).toMatch(/^\{"sessionId":"s-[^"]+","id":"[^"]+","seq":\d+\}$/);
      const events = JSON.parse(lines[3]!) as { events: { type: string; text: string }[] };
      expect(events.events[0]).toMatchObject({ type: 'chat' });
      expect(events.events[0]!.text).toContain('hello from curl</message>');
      expect(events.events.map((e) => e.text).join('\n')).toContain('Summarise the news');
      // `pincer host stop` stopped the host cleanly.
      expect(lines[4]).toMatch(/^stopped the host \(pid \d+\) on /);
      expect(fs.readFileSync(path.join(cwd, 'host.log'), 'utf8')).toMatch(/\[host\] stopped\n$/);
      expect(fs.existsSync(path.join(home, '.pincer', 'host.lock'))).toBe(false);
    }
  }, 400_000);
});
