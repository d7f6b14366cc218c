import { describe, expect, it } from 'vitest';
import { runnerEnvironment } from '../src/container/env.js';
import { loadHostConfig } from '../src/host/config.js';
import { climbsOut } from '../src/host/credential-proxy.js';
import { createLogger, redactInLogs } from '../src/shared/log.js';
import { isRunnerVariable, SETTINGS } from '../src/shared/settings.js';

/** The fast parts of the hostile-agent defences (the attacks themselves run on a real host in hostile-*.e2e). */
describe('the proxy path check', () => {
  it.each([
    '/v1/..%2f..%2fadmin/keys',
    '/v1/%2e%2e%2fadmin',
    '/v1/%2E%2E/admin',
    '/v1/..%5cadmin',
    '/v1/%252e%252e%252fadmin',
    '/v1\\..\\admin',
    '/v1/../admin',
    '/v1/%zz',
  ])('refuses %s', (p) => expect(climbsOut(p)).toBe(true));
  it.each(['/v1/messages', '/v1/chat/completions', '/v1/models/gpt-5', '/v1/messages%3Fx', '/v1/a.b/c..d'])('passes %s', (p) =>
    expect(climbsOut(p)).toBe(false),
  );
});

describe('the runner environment is an allow-list from the settings registry', () => {
  const host = {
    TZ: 'UTC',
    PINCER_HOME: '/tmp/x',
    PATH: '/usr/bin',
    PINCER_HTTP_TOKEN: 'h'.repeat(20),
    PINCER_METRICS_TOKEN: 'm'.repeat(20),
    OPENAI_ADMIN_KEY: 'sk-admin',
    OPENAI_PROJECT_KEY: 'sk-proj',
    ANTHROPIC_CUSTOM_HEADERS: 'x: y',
    AWS_SECRET_ACCESS_KEY: 'aws',
    SLACK_BOT_TOKEN: 'xoxb-1',
    PINCER_BATCH_MAX_MESSAGES: '9',
    MOCK_DELAY_MS: '1',
    PINCER_CONTAINER_MEMORY: '1g',
  };

  it('keeps only what a runner or its launcher reads', () => {
    const env = loadHostConfig(host).runners.env;
    expect(Object.keys(env).sort()).toEqual(['MOCK_DELAY_MS', 'PATH', 'PINCER_BATCH_MAX_MESSAGES', 'PINCER_CONTAINER_MEMORY']);
    expect(runnerEnvironment({ ...env, AGENT_PROVIDER: 'codex' })).toEqual({ AGENT_PROVIDER: 'codex', PINCER_BATCH_MAX_MESSAGES: '9' });
  });

  it('adds PINCER_CONTAINER_ENV names, but never a host secret', () => {
    expect(loadHostConfig({ ...host, PINCER_CONTAINER_ENV: 'AWS_SECRET_ACCESS_KEY' }).runners.env.AWS_SECRET_ACCESS_KEY).toBe('aws');
    expect(() => loadHostConfig({ ...host, PINCER_CONTAINER_ENV: 'PINCER_HTTP_TOKEN, SLACK_BOT_TOKEN' })).toThrow(
      'PINCER_CONTAINER_ENV: PINCER_HTTP_TOKEN, SLACK_BOT_TOKEN are secrets of the host and never passed to a runner',
    );
  });

  it('lists each variable once, with who reads it', () => {
    const names = SETTINGS.map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
    expect(isRunnerVariable('PINCER_HTTP_TOKEN')).toBe(false);
    expect(isRunnerVariable('OPENAI_ADMIN_KEY')).toBe(false);
    expect(isRunnerVariable('ANTHROPIC_API_KEY')).toBe(true); // as the proxy's placeholder only
  });
});

describe('log redaction', () => {
  it('replaces a registered secret in every line', () => {
    const lines: string[] = [];
    redactInLogs(['xoxb-very-secret-token']);
    createLogger('t', (line) => lines.push(line)).warn('slack: {"headers":{"Authorization":"Bearer xoxb-very-secret-token"}}');
    expect(lines[0]).toContain('"Bearer [redacted]"');
    expect(lines[0]).not.toContain('xoxb-very-secret-token');
  });
});
