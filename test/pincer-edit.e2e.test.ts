import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';

/**
 * The built-in runtime's `edit` and `write` through a real host: the runner child plans each edit on a worker thread
 * of its file-tool pool, writes on its main thread, and keeps the unified-diff receipt in the conversation's
 * transcript, where `patch` applies it to reproduce the file.
 */
afterEach(async () => {
  await closeFakeOpenAIs();
  const left = await stopAllHosts();
  expect(left).toEqual({ hosts: 0, runners: 0 });
});

describe('built-in runtime: file edits planned on a worker', { timeout: 90_000 }, () => {
  it('a normalised edit, a multi-edit and an overwrite, each with receipts the model and the transcript get', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      { text: 'ready' },
      { call: 'edit', args: { path: 'notes.md', oldText: 'say "hello"', newText: 'say "good morning"' } },
      {
        call: 'edit',
        args: {
          path: 'notes.md',
          edits: [
            { oldText: 'one', newText: 'ONE' },
            { oldText: 'three', newText: 'THREE' },
          ],
        },
      },
      { call: 'write', args: { path: 'notes.md', content: 'rewritten\n' } },
      { text: 'edited' },
    );
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-edit-home-'));
    const host = await startHost(
      { AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl, PINCER_MODEL_MAX_RETRIES: '0' },
      home,
    );
    // the notes are in the session's own agent/ (the agent's working folder), there once its first message made it
    const stream = host.stream('edits');
    const sent = (await host.request('POST', '/v1/conversations/edits/messages', { text: 'hello' })).body as { sessionId: string };
    await stream.waitFor('the first answer', (e) => e.event === 'chat' && e.data.text === 'ready', 60_000);
    const file = path.join(host.sessionDir(sent.sessionId), 'agent', 'notes.md');
    const original = 'one\ntwo\nthree\nthen say \u201chello\u201d\n';
    fs.writeFileSync(file, original);
    expect((await host.request('POST', '/v1/conversations/edits/messages', { text: 'tidy my notes' })).status).toBe(202);
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'edited', 60_000);
    expect(fs.readFileSync(file, 'utf8')).toBe('rewritten\n');

    // The model got each display receipt as the tool's answer.
    const bodies = fake.modelRequests().map((r) => JSON.stringify(r.body));
    expect(bodies[2]).toContain('edited notes.md at line 4 (matched after normalising curly vs straight quotes)');
    expect(bodies[2]).toContain('4 + then say \\"good morning\\"');
    expect(bodies[3]).toContain('edited notes.md at line 1, line 3');
    expect(bodies[4]).toContain('wrote 10 bytes to notes.md');

    // The transcript keeps the unified receipts: applied in order with patch, they reproduce every step.
    const transcripts = path.join(host.sessionDir(sent.sessionId), '.pincer-sessions');
    const [jsonl] = fs.readdirSync(transcripts);
    const unified = fs
      .readFileSync(path.join(transcripts, jsonl!), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { message?: { role?: string; details?: { unified?: string } } })
      .flatMap((entry) => (entry.message?.role === 'toolResult' && entry.message.details?.unified ? [entry.message.details.unified] : []));
    expect(unified).toHaveLength(3);
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-edit-patch-'));
    fs.writeFileSync(path.join(work, 'notes.md'), original);
    for (const receipt of unified) {
      const run = spawnSync('patch', ['-p1', '--batch', '--silent'], { cwd: work, input: receipt, encoding: 'utf8' });
      expect(run.status, run.stderr + run.stdout).toBe(0);
    }
    expect(fs.readFileSync(path.join(work, 'notes.md'), 'utf8')).toBe('rewritten\n');
    fs.rmSync(work, { recursive: true, force: true });

    const runnerLog = fs.readFileSync(path.join(home, 'logs', `${sent.sessionId}.log`), 'utf8');
    expect(runnerLog).toMatch(/tool edit/);
    stream.close();
    expect(await host.stop()).toBe(0);
    fs.rmSync(home, { recursive: true, force: true });
  });
});
