import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { onPath } from './support/dockerd.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';

/**
 * Codex's shell tool with its default settings, through a real host: in a process runner Codex's own sandbox
 * (workspace-write) must accept the session's agent folder, which is a link to the group folder; in a bubblewrap
 * runner its sandbox cannot nest, and the runner's sandbox confines it instead. Either way the command runs and its
 * file lands in the group folder. The home is outside the temp folder, as a user's is: Codex will not set up its
 * sandbox's helper under $TMPDIR.
 */
const MODES = onPath('bwrap') ? ['process', 'bwrap'] : ['process'];
if (MODES.length === 1) console.warn('[codex] bubblewrap is not installed: the shell runs with process runners only');

const homes: string[] = [];
afterEach(async () => {
  expect((await stopAllHosts()).runners).toBe(0);
  await closeFakeOpenAIs();
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

describe("Codex's shell with default settings", { timeout: 120_000 }, () => {
  it.each(MODES)('runs a command in the agent folder (%s runner)', async (mode) => {
    const home = fs.mkdtempSync('/var/tmp/pincer-codex-');
    homes.push(home);
    const fake = await startFakeOpenAI();
    fake.script({ call: 'exec_command', args: { cmd: 'echo made-$((6*7)) > made.txt && cat made.txt' } }, { text: 'done' });
    const host = await startHost(
      { AGENT_PROVIDER: 'codex', OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: 'k', CODEX_MODEL: fake.model, CODEX_MAX_RETRIES: '0', PINCER_RUNNER: mode },
      home,
    );
    const stream = host.stream('c');
    const sent = await host.request('POST', '/v1/conversations/c/messages', { text: 'make a file' });
    expect(sent.status).toBe(202);
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'done', 90_000);
    const output = JSON.stringify(fake.modelRequests()[1]!.body.input);
    expect(output).toContain('made-42');
    expect(output).toContain('exited with code 0');
    // in the session's own agent/, never the group's folder
    expect(fs.readFileSync(path.join(host.sessionDir(sent.body.sessionId as string), 'agent', 'made.txt'), 'utf8')).toBe('made-42\n');
    expect(fs.existsSync(path.join(host.home, 'groups', 'main', 'made.txt'))).toBe(false);
  });
});
