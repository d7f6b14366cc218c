import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI, startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';

/**
 * How the runner picks and configures the Codex and OpenCode providers: names and aliases, `auto`, and explicit bad
 * settings failing closed at start-up with one exact line (no model server or binary is involved).
 */
afterEach(async () => {
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

describe('codex and opencode configuration', () => {
  it.each([
    [
      'a bad CODEX_SANDBOX_MODE',
      { AGENT_PROVIDER: 'codex', OPENAI_API_KEY: 'k', CODEX_SANDBOX_MODE: 'yolo' },
      /^[0-9T:.Z-]+ \[runner\] error: codex: invalid CODEX_SANDBOX_MODE: .*"workspace-write"/,
    ],
    [
      'a bad CODEX_NETWORK_ACCESS',
      { AGENT_PROVIDER: 'codex', OPENAI_API_KEY: 'k', CODEX_NETWORK_ACCESS: 'maybe' },
      /^[0-9T:.Z-]+ \[runner\] error: codex: invalid CODEX_NETWORK_ACCESS: /,
    ],
    [
      'a Codex base URL without a model',
      { AGENT_PROVIDER: 'codex', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
      /^[0-9T:.Z-]+ \[runner\] error: codex: OPENAI_BASE_URL is set but no model: set CODEX_MODEL to a model the server serves$/,
    ],
    [
      'OpenCode without a model (refused at selection: its server would retry forever)',
      { AGENT_PROVIDER: 'opencode' },
      /^[0-9T:.Z-]+ \[runner\] error: provider "opencode" \(session policy "opencode"\) has no credentials: set OPENCODE_MODEL/,
    ],
    [
      'Codex without a key or a server (refused at selection: the CLI would retry for minutes)',
      { AGENT_PROVIDER: 'codex' },
      /^[0-9T:.Z-]+ \[runner\] error: provider "codex" \(session policy "codex"\) has no credentials: set OPENAI_API_KEY or CODEX_API_KEY/,
    ],
    [
      'a bad OPENCODE_BASE_URL',
      { AGENT_PROVIDER: 'opencode', OPENCODE_MODEL: 'm', OPENCODE_BASE_URL: 'not a url' },
      /^[0-9T:.Z-]+ \[runner\] error: opencode: invalid OPENCODE_BASE_URL: /,
    ],
  ])('exits 2 with one clear line for %s', (_name, env, line) => {
    const session = createTestSession();
    const result = spawnSync(process.execPath, [BUILT_CLI, 'runner'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', PINCER_WORKSPACE: session.paths.root, ...env },
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(result.status).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line);
  });

  it.each([
    ['the alias codex-app-server', { AGENT_PROVIDER: 'Codex-App-Server', OPENAI_API_KEY: 'k' }, 'provider codex (session policy "Codex-App-Server")'],
    [
      'auto with an OpenAI key',
      { AGENT_PROVIDER: 'auto', OPENAI_API_KEY: 'k' },
      'provider codex (auto (session policy "auto"): first installed provider with credentials)',
    ],
    [
      'auto with an OpenCode model',
      { AGENT_PROVIDER: 'auto', OPENCODE_MODEL: 'anthropic/some-model' },
      'provider opencode (auto (session policy "auto"): first installed provider with credentials)',
    ],
  ])('resolves %s', async (_name, env, ready) => {
    const session = createTestSession();
    const runner = startRunner(session.paths.root, env);
    await runner.ready();
    expect(runner.stderr()).toContain(`[runner] ready: ${ready}`);
    expect(await runner.stop()).toBe(0);
  });
});
