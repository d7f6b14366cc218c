import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { createSessionFolder } from '../src/db/layout.js';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { reapSessionProcesses, type SessionProcess } from './support/processes.js';
import { BUILT_CLI, startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * The built-in runtime's hooks, in the real runner process against the fake model servers: the compaction guard (a
 * failed summary keeps the conversation whole and is retried later), the group's compaction instructions in the
 * summary request, context pruning of old tool results (tokens before and after), and a model entry's request
 * parameters in the request body (and in `pincer doctor`).
 */
const SLOW = { timeoutMs: 30_000 };
const sessions: TestSession[] = [];
const anthropicFakes: FakeAnthropic[] = [];

function session(runtime?: Record<string, unknown>): TestSession {
  const s = createTestSession('pincer-hooks-');
  if (runtime) fs.writeFileSync(path.join(s.paths.agent, 'package.json'), JSON.stringify({ pincer: { runtime } }));
  sessions.push(s);
  return s;
}

async function fakeAnthropic(): Promise<FakeAnthropic> {
  const fake = await startFakeAnthropic();
  anthropicFakes.push(fake);
  return fake;
}

const anthropicEnv = (fake: FakeAnthropic, extra: Record<string, string> = {}): Record<string, string> => ({
  AGENT_PROVIDER: 'pincer',
  PINCER_MODEL_MAX_RETRIES: '0',
  PINCER_STOP_GRACE_MS: '300',
  PINCER_MODEL: 'anthropic/claude-sonnet-4-5',
  ANTHROPIC_BASE_URL: fake.url,
  ANTHROPIC_API_KEY: 'test-anthropic-key',
  ...extra,
});

afterEach(async () => {
  const runnersLeft = await stopAllRunners();
  const processesLeft: SessionProcess[] = [];
  for (const s of sessions.splice(0)) processesLeft.push(...(await reapSessionProcesses(s.paths.root)));
  await closeFakeOpenAIs();
  await Promise.all(anthropicFakes.splice(0).map((fake) => fake.close()));
  cleanupSessions();
  expect(runnersLeft).toBe(0);
  expect(processesLeft).toEqual([]);
});

const note = (tag: string): string => `${tag} ${'lorem ipsum dolor sit amet '.repeat(25)}`;

describe('built-in runtime hooks', { timeout: 90_000 }, () => {
  it('a failed summary keeps the conversation whole and is retried later, with the group instructions', async () => {
    const fake = await fakeAnthropic();
    fake.script(
      { text: 'noted one' },
      { status: 500, message: 'summariser down' },
      { text: 'noted two' },
      { text: 'SUMMARY: MARKER notes' },
      { text: 'noted three' },
    );
    const s = session({ compactionInstructions: 'keep decisions & file names' });
    const runner = startRunner(s.paths.root, anthropicEnv(fake, { PINCER_CONTEXT_WINDOW: '400' }));
    await runner.ready(SLOW.timeoutMs);
    s.chat(note('MARKER-ONE'));
    await waitFor('the first answer', () => s.outbound().length === 1, SLOW);
    s.chat(note('MARKER-TWO'));
    await waitFor('the second answer', () => s.outbound().length === 2, SLOW);
    const [, failedSummary, whole] = fake.modelRequests();
    expect(failedSummary!.toolNames).toEqual([]);
    expect(failedSummary!.allText).toContain('<instructions>keep decisions &amp; file names</instructions>');
    // The answer came from the whole conversation: nothing was cut.
    expect(whole!.allText).toContain('MARKER-ONE');
    expect(whole!.lastUserText).toContain('MARKER-TWO');
    expect(runner.stderr()).toMatch(
      /\[pincer\] compaction guard: the summary failed \(.*500.*\); the conversation is kept whole and compaction is retried before a later model call/,
    );

    s.chat(note('MARKER-THREE'));
    await waitFor('the third answer', () => s.outbound().length === 3, SLOW);
    const [, , , retried, compacted] = fake.modelRequests();
    expect(retried!.toolNames).toEqual([]);
    expect(retried!.allText).toContain('MARKER-ONE');
    expect(compacted!.allText).toContain('SUMMARY: MARKER notes');
    expect(compacted!.allText).not.toContain('MARKER-ONE');
    expect(compacted!.lastUserText).toContain('MARKER-THREE');
    expect(runner.stderr()).toMatch(/\[pincer\] compacted \d+ messages/);
    expect(await runner.stop()).toBe(0);
  });

  it('prunes old tool results of a tool-heavy conversation into stubs before compaction is needed', async () => {
    const fake = await fakeAnthropic();
    const bash = (n: number) => ({ toolUse: { name: 'bash', input: { command: `printf 'OUTPUT-${n} '; head -c 6000 /dev/zero | tr '\\0' 'x'` } } });
    fake.script(bash(1), bash(2), bash(3), bash(4), bash(5), { text: 'five commands run' }, { text: 'second answer' });
    const s = session({ pruneToolResultsTokens: 2000 });
    const runner = startRunner(s.paths.root, anthropicEnv(fake));
    await runner.ready(SLOW.timeoutMs);
    s.chat('run five commands');
    await waitFor('the first answer', () => s.outbound().length === 1, SLOW);
    // Within the turn nothing is pruned: the model sees every result it asked for.
    expect(fake.modelRequests()[5]!.allText).toContain('OUTPUT-1 ');
    s.chat('and now?');
    await waitFor('the second answer', () => s.outbound().length === 2, SLOW);
    const last = fake.modelRequests().at(-1)!;
    // 2000 tokens keep the newest result (~1500 tokens); the four older ones are stubs saying what was there.
    expect(last.allText).toContain('OUTPUT-5 ');
    for (const n of [1, 2, 3, 4]) expect(last.allText).not.toContain(`OUTPUT-${n} ${'x'.repeat(200)}`);
    expect(last.allText.match(/\[old tool result pruned to save context: bash returned \d+ characters here, starting: "OUTPUT-\d /g)).toHaveLength(4);
    const line = /context pruning: 4 old tool results replaced by stubs \(~(\d+) → ~(\d+) tokens\)/.exec(runner.stderr());
    expect(line).not.toBeNull();
    const [before, after] = [Number(line![1]), Number(line![2])];
    expect(before - after).toBeGreaterThan(5000);
    console.log(`[pincer-hooks] pruning: ~${before} → ~${after} estimated tokens`);
    expect(await runner.stop()).toBe(0);
  });

  it('a model entry’s params reach the request body, and doctor shows them', async () => {
    const fake = await startFakeOpenAI();
    fake.script({ text: 'tuned' });
    const s = session();
    fs.writeFileSync(s.paths.config, JSON.stringify({ models: { 'local/qwen3:8b': { params: { temperature: 0.2, maxTokens: 300, reasoning: 'low' } } } }));
    const env = {
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL_MAX_RETRIES: '0',
      PINCER_STOP_GRACE_MS: '300',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: fake.baseUrl,
    };
    const runner = startRunner(s.paths.root, env);
    await runner.ready(SLOW.timeoutMs);
    s.chat('hello');
    await waitFor('the answer', () => s.outbound().length === 1, SLOW);
    const body = fake.modelRequests()[0]!.body;
    expect(body).toMatchObject({ temperature: 0.2, max_tokens: 300, reasoning_effort: 'low' });
    expect(runner.stderr()).toContain('params temperature 0.2, maxTokens 300, reasoning low');
    expect(await runner.stop()).toBe(0);
  });

  it('doctor shows a session model’s params; a bad runtime setting is a diagnostic', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-doctor-home-'));
    const dir = path.join(home, 'sessions', 'one');
    openSessionDb(createSessionFolder(dir).db).close();
    fs.writeFileSync(
      path.join(dir, 'config.json'),
      JSON.stringify({ model: 'local/qwen3:8b', models: { 'local/qwen3:8b': { params: { temperature: 0.7 } } } }),
    );
    fs.writeFileSync(path.join(dir, 'agent', 'package.json'), JSON.stringify({ pincer: { runtime: { codeMode: 'yes' } } }));
    const result = spawnSync(process.execPath, [BUILT_CLI, 'doctor'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PINCER_HOME: home, AGENT_PROVIDER: 'mock' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.stdout).toContain('model: local/qwen3:8b, params temperature 0.7');
    expect(result.stdout).toMatch(/! .*package\.json: "pincer\.runtime": .*codeMode/);
    fs.rmSync(home, { recursive: true, force: true });
  });
});
