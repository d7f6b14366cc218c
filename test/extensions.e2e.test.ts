import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startFakeOpenAI } from './support/fake-openai.js';
import { BUILT_CLI, startRunner } from './support/runner-harness.js';
import { createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';
import { cleanUpProviderRunsAfterEach, trackSession } from './support/openai-provider-e2e.js';

/**
 * Extensions of an agent group's resource package, end to end with the shipped example (examples/extension): the real
 * runner imports them before choosing its runtime, `auto` picks the example's harness for the route it supports, the
 * built-in runtime offers the example's tool, a broken module is reported without stopping the others, and `pincer
 * doctor` lists them without running their code.
 */
const EXAMPLE = fileURLToPath(new URL('../examples/extension/', import.meta.url));
/** Generous: the suite shares two cores with other processes. */
const SLOW = { timeoutMs: 30_000 };

function sessionWithExample(layout: 'convention' | 'manifest'): TestSession {
  const session = trackSession(createTestSession('pincer-ext-'));
  const agent = session.paths.agent;
  if (layout === 'convention') {
    fs.mkdirSync(path.join(agent, 'extensions'));
    fs.copyFileSync(path.join(EXAMPLE, 'index.mjs'), path.join(agent, 'extensions', 'example.mjs'));
    fs.writeFileSync(path.join(agent, 'extensions', 'broken.mjs'), "throw new Error('boom at import');\n");
  } else {
    fs.copyFileSync(path.join(EXAMPLE, 'index.mjs'), path.join(agent, 'index.mjs'));
    fs.copyFileSync(path.join(EXAMPLE, 'package.json'), path.join(agent, 'package.json'));
  }
  return session;
}

cleanUpProviderRunsAfterEach();

describe('extensions', { timeout: 60_000 }, () => {
  it('register a harness that auto chooses for the route it supports; a broken module is reported', async () => {
    const session = sessionWithExample('convention');
    const runner = startRunner(session.paths.root, { AGENT_PROVIDER: '', PINCER_MODEL: 'local/demo', OPENAI_BASE_URL: 'http://echo.invalid/v1' });
    await runner.ready(SLOW.timeoutMs);
    const log = runner.stderr();
    expect(log).toContain('[runner] [example.mjs] word_count tool and parrot harness registered');
    expect(log).toContain('[runner] extension example.mjs: tool word_count, harness parrot');
    expect(log).toMatch(/\[runner\] warn: resources: extension .*broken\.mjs: failed to load: boom at import/);
    expect(log).toMatch(
      /\[runner\] provider parrot: auto \(no policy set\): harness parrot supports the route local\/demo via openai-completions at http:\/\/echo\.invalid\/v1/,
    );
    const { id } = session.chat('hello harness');
    await waitFor('the answer', () => session.outbound().length === 1, SLOW);
    expect(String(session.outboundContents()[0]!.text)).toMatch(/^parrot: .*hello harness<\/message>/s);
    await waitFor('completed', () => session.inbound(id).status === 'completed', SLOW);
    expect(await runner.stop()).toBe(0);
  });

  it('the same model on another endpoint stays on the built-in runtime, which offers the extension tool', async () => {
    const fake = await startFakeOpenAI();
    fake.script({ call: 'word_count', args: { text: 'one two three four' } }, { text: 'four words' });
    const session = sessionWithExample('manifest');
    const runner = startRunner(session.paths.root, {
      AGENT_PROVIDER: '',
      PINCER_MODEL: 'local/demo',
      OPENAI_BASE_URL: fake.baseUrl,
      PINCER_MODEL_MAX_RETRIES: '0',
    });
    await runner.ready(SLOW.timeoutMs);
    expect(runner.stderr()).toMatch(/\[runner\] provider pincer: auto \(no policy set\): the built-in runtime for local\/demo/);
    session.chat('count please');
    await waitFor('the answer', () => session.outbound().length === 1, { timeoutMs: 30_000 });
    expect(String(session.outboundContents()[0]!.text)).toBe('four words');
    const [first, second] = fake.modelRequests();
    expect(JSON.stringify(first!.body.tools)).toContain('word_count');
    expect(JSON.stringify(second!.body.messages)).toContain('4 words');
    expect(await runner.stop()).toBe(0);
  });

  it('pincer doctor lists them without running their code', () => {
    const session = sessionWithExample('convention');
    session.db.close();
    fs.writeFileSync(session.paths.config, JSON.stringify({ provider: 'parrot' }));
    const result = spawnSync(process.execPath, [BUILT_CLI, 'doctor', '--workspace', session.paths.root], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.stdout).toContain('resources: 0 skills from none, 0 prompts from none, 2 extensions (broken.mjs, example.mjs) from convention');
    expect(result.stdout).not.toContain('boom');
    // The harness only an extension registers is unknown to doctor, which says why.
    expect(result.stdout).toContain('✗ provider: unknown provider "parrot"');
    expect(result.stdout).toContain('(an extension of this package may register it: doctor lists extensions without running them)');
  });
});
