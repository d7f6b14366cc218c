import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ContentBlock } from '../src/providers/types.js';
import { FIXTURES } from './support/media-fixtures.js';
import { startRunner, stopAllRunners } from './support/runner-harness.js';
import { promptText, recorded, recordFile } from './support/mock-record.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

afterEach(async () => {
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

describe('task pre-scripts in the runner', () => {
  it('wakeAgent true: the agent gets the task with its Script output', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const { id } = s.insert({ kind: 'task', content: { prompt: 'Review open PRs', script: `echo '{"wakeAgent": true, "data": {"open": 2}}'` } });
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    expect(promptText(recorded(s)[0]!)).toMatch(/\[SCHEDULED TASK\].*\n\nScript output:\n\{\n {2}&quot;open&quot;: 2\n\}\n\nInstructions:\nReview open PRs/);
    await runner.stop();
  });

  it('wakeAgent false: the task completes without calling the provider', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const { id } = s.insert({ kind: 'task', content: { prompt: 'x', script: `echo '{"wakeAgent": false}'` } });
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    expect(recorded(s)).toHaveLength(0);
    expect(s.outbound()).toHaveLength(0);
    await runner.stop();
  });

  it('a failing script ends the occurrence failed with the reason', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const { id } = s.insert({ kind: 'task', content: { prompt: 'x', script: 'echo broken >&2; exit 3' }, recurrence: '0 9 * * *', seriesId: 'series-a' });
    await waitFor('failed', () => s.inbound(id).status === 'failed');
    expect(s.inbound(id).last_error).toBe('script exited with 3: broken');
    expect(recorded(s)).toHaveLength(0);
    await runner.stop();
  });

  it('a slow script does not hold up other messages', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const marker = path.join(s.paths.root, 'go');
    const task = s.insert({
      kind: 'task',
      content: { prompt: 'after the wait', script: `while [ ! -e ${marker} ]; do sleep 0.05; done\necho '{"wakeAgent": true}'` },
    });
    await waitFor('task claimed', () => s.inbound(task.id).status === 'processing');
    const chat = s.chat('meanwhile');
    await waitFor('chat answered while the script runs', () => s.inbound(chat.id).status === 'completed');
    expect(s.inbound(task.id).status).toBe('processing');
    fs.writeFileSync(marker, '');
    await waitFor('task completed', () => s.inbound(task.id).status === 'completed');
    expect(recorded(s).map(promptText).join('\n')).toContain('after the wait');
    await runner.stop();
  });

  it('a hanging script is killed at the timeout and the task fails', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { PINCER_SCRIPT_TIMEOUT_MS: '500' });
    const { id } = s.insert({ kind: 'task', content: { prompt: 'x', script: 'sleep 60' } });
    await waitFor('failed', () => s.inbound(id).status === 'failed');
    expect(s.inbound(id).last_error).toBe('script timed out after 500 ms and was killed');
    await runner.stop();
  });
});

describe('attachments in the runner', () => {
  it('a provider that takes images natively gets an image block; the text notes the saved file', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s), MOCK_NATIVE_MEDIA: 'image,pdf' });
    const { id } = s.insert({
      kind: 'chat',
      content: { text: 'what is this?', sender: 'ann', attachments: [{ type: 'image', name: 'shot.png', data: FIXTURES.png.toString('base64') }] },
    });
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    const prompt = recorded(s)[0]!.prompt as ContentBlock[];
    expect(prompt[0]).toEqual({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: FIXTURES.png.toString('base64') } });
    expect(prompt[1]!.type).toBe('text');
    expect(promptText(recorded(s)[0]!)).toContain(`[image attached: shot.png, also at: ${path.join(s.paths.downloads, id, 'shot.png')}]`);
    await runner.stop();
  });

  it('a provider without native media gets the file path in the text', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const { id } = s.insert({
      kind: 'chat',
      content: { text: 'see', sender: 'ann', attachments: [{ type: 'file', name: 'data.csv', data: FIXTURES.csv.toString('base64') }] },
    });
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    expect(recorded(s)[0]!.prompt).toContain(`see\n[file available at: ${path.join(s.paths.downloads, id, 'data.csv')}]</message>`);
    await runner.stop();
  });
});

describe('transcript archive', () => {
  it('writes a readable archive after each query of a provider without hooks', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root);
    const { id } = s.chat('Plan the Q3 launch, please!');
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    const dir = path.join(s.paths.agent, 'conversations');
    const [file] = await waitFor('archive', () => fs.existsSync(dir) && fs.readdirSync(dir).length > 0 && fs.readdirSync(dir));
    expect(file).toMatch(/^\d{4}-\d{2}-\d{2}-plan-the-q3-launch-please\.md$/);
    // The archive is created, then written (not atomically): wait for its content rather than reading it at once.
    const text = await waitFor('archive content', () => fs.readFileSync(path.join(dir, file!), 'utf8'));
    expect(text).toMatch(/^# Conversation \d{4}-\d{2}-\d{2} \d{2}:\d{2} \(UTC\)/);
    expect(text).toMatch(/## Prompt · .*\n\n```text\n<context timezone="UTC"\/>[\s\S]*Plan the Q3 launch, please!/);
    expect(text).toMatch(/## Agent · .*\n\n```text\necho: /);
    await runner.stop();
  });
});
