/**
 * `pincer chat`'s terminal UI in a real terminal (tmux), with a real host, a runner child process on the built-in
 * runtime and a scripted model: a tool call shows its live line while it runs (the tool waits for the test's file, so
 * the running state is seen without timing) and its done line after; the answer is rendered as markdown; a question
 * is a list answered with the arrow keys and Enter; Ctrl-C leaves.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { HAS_TMUX, openTerminal, stopAllTerminals } from './support/tmux.js';

const dirs: string[] = [];

afterEach(async () => {
  stopAllTerminals();
  await closeFakeOpenAIs();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!HAS_TMUX)('pincer chat terminal UI (tmux)', { timeout: 180_000 }, () => {
  it('shows a live tool line, markdown answers, a question answered with the arrow keys, and leaves on Ctrl-C', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chat-tui-'));
    dirs.push(home);
    const release = path.join(home, 'release');
    const fake = await startFakeOpenAI();
    fake.script(
      { call: 'bash', args: { command: `while [ ! -e ${release} ]; do sleep 0.1; done; echo released` } },
      { text: '**Done** — see `notes.md`' },
      { call: 'mcp__pincer__ask_user_question', args: { title: 'Pick one', question: 'Which one?', options: ['Alpha', 'Beta', 'Gamma'] } },
      { text: 'You picked it.' },
    );
    const terminal = openTerminal([process.execPath, BUILT_CLI, 'chat'], {
      PINCER_HOME: home,
      TZ: 'UTC',
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: fake.baseUrl,
      PINCER_MODEL_MAX_RETRIES: '0',
      PINCER_RUNNER: 'process',
    });
    await terminal.waitFor('the status line', (s) => s.includes('provider pincer · model local/qwen3:8b'));
    terminal.line('run it');
    // the tool line and the status line come with the same turn of the host, drawn in one frame or two
    await terminal.waitFor(
      'the running tool line and the status',
      (s) => /… bash while \[ ! -e .*release/.test(s) && /working… \d+ s · bash while/.test(s),
      60_000,
    );
    fs.writeFileSync(release, '');
    const done = await terminal.waitFor(
      'the done line and the answer',
      (s) => /✓ bash while .* \d+\.\d s/.test(s) && s.includes('Done — see notes.md'),
      60_000,
    );
    // markdown: no asterisks or backticks left of the answer
    expect(done).not.toContain('**Done**');
    expect(done).toContain('you> run it');

    terminal.line('ask me');
    await terminal.waitFor('the question as a list', (s) => s.includes('Which one?') && /→ Alpha/.test(s), 60_000);
    terminal.keys('Down');
    await terminal.waitFor('Beta selected', (s) => /→ Beta/.test(s));
    terminal.keys('Enter');
    const answered = await terminal.waitFor(
      'the answer after the choice',
      (s) => s.includes('pincer: answered "Beta"') && s.includes('You picked it.'),
      60_000,
    );
    // the list is gone from the screen (what scrolled off keeps what was drawn then)
    expect(answered.split('\n').slice(-12).join('\n')).not.toMatch(/→ Beta/);
    expect(JSON.stringify(fake.modelRequests().at(-1)!.body)).toContain('Beta');

    terminal.keys('C-c');
    const end = await terminal.waitFor('exit', (s) => /\[exit \d+\]/.test(s));
    expect(end).toContain('[exit 0]');
  });
});
