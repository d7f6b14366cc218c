import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { registerBuiltInProviders } from '../src/providers/index.js';
import { isProviderError, normaliseProviderName, resolveProvider, selectProviderFor } from '../src/providers/registry.js';
import { describeRoute, resolveModelRoute } from '../src/runtime/model-route.js';
import { describeSelection, selectProvider, type ProviderProbe, type SelectionInput } from '../src/runtime/selection.js';
import { BUILT_CLI, startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';

registerBuiltInProviders();

afterEach(async () => {
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

const ok = (name: string, auto = true): ProviderProbe => ({ name, installed: true, credentials: true, auto });
const noKey = (name: string): ProviderProbe => ({ name, installed: true, credentials: false, noCredentials: `set ${name.toUpperCase()}_KEY`, auto: true });
const missing = (name: string): ProviderProbe => ({ name, installed: false, notInstalled: `${name} binary not found`, credentials: true, auto: true });

function select(input: Partial<SelectionInput> & { probes: ProviderProbe[] }) {
  return selectProvider({ normalise: normaliseProviderName, ...input });
}

const allUsable = [ok('claude'), ok('codex'), ok('opencode'), ok('mock', false)];

describe('provider selection policy', () => {
  it.each([
    {
      case: 'session beats group and model',
      policy: { session: 'codex', group: 'opencode', model: { id: 'm', provider: 'claude' } },
      provider: 'codex',
      source: 'session',
    },
    { case: 'group beats model', policy: { group: 'opencode', model: { id: 'm', provider: 'codex' } }, provider: 'opencode', source: 'group' },
    { case: 'the model entry applies when no scope is set', policy: { model: { id: 'gpt-x', provider: 'codex' } }, provider: 'codex', source: 'model' },
    { case: '"default" inherits', policy: { session: 'default', group: 'codex' }, provider: 'codex', source: 'group' },
    { case: 'empty inherits', policy: { session: '  ', group: 'opencode' }, provider: 'opencode', source: 'group' },
    { case: 'nothing set is auto', policy: {}, provider: 'claude', source: 'auto' },
    { case: 'an explicit auto stops inheritance', policy: { session: 'auto', group: 'codex' }, provider: 'claude', source: 'session' },
    { case: 'aliases are normalised', policy: { session: 'Codex-App-Server' }, provider: 'codex', source: 'session' },
    { case: 'claude-code is claude', policy: { group: 'CLAUDE-CODE' }, provider: 'claude', source: 'group' },
  ])('$case', ({ policy, provider, source }) => {
    const result = select({ ...policy, probes: allUsable });
    expect(result).toMatchObject({ ok: true, provider, source });
  });

  it.each([
    { code: 'unknown', session: 'claud', probes: allUsable, message: 'unknown provider "claud" (known: claude, codex, opencode, mock)' },
    {
      code: 'not-installed',
      session: 'codex',
      probes: [ok('claude'), missing('codex')],
      message: 'provider "codex" (session policy "codex") is not installed: codex binary not found',
    },
    {
      code: 'no-credentials',
      session: 'claude',
      probes: [noKey('claude'), ok('codex')],
      message: 'provider "claude" (session policy "claude") has no credentials: set CLAUDE_KEY',
    },
  ])('an explicit choice fails closed when $code, never falling back', ({ code, session, probes, message }) => {
    const result = select({ session, probes });
    expect(result).toMatchObject({ ok: false, code, message });
  });

  it('names the layer of an unknown name set on the group', () => {
    expect(select({ group: 'gemini', probes: allUsable })).toMatchObject({ ok: false, message: expect.stringContaining('in the group policy') });
  });

  it('auto takes the first installed provider with credentials, in preference order', () => {
    const result = select({ probes: [noKey('claude'), missing('codex'), ok('opencode'), ok('mock', false)] });
    expect(result).toMatchObject({ ok: true, provider: 'opencode', source: 'auto' });
  });

  it('auto never picks a provider that is not for auto (mock); it falls back to claude', () => {
    const result = select({ probes: [{ ...ok('claude'), autoCredentials: false }, missing('codex'), ok('mock', false)] });
    expect(result).toMatchObject({ ok: true, provider: 'claude', reason: expect.stringContaining('falling back to claude') });
  });

  it('auto fails at selection, in one line, when the fallback has no credentials either', () => {
    const result = select({ probes: [noKey('claude'), missing('codex'), ok('mock', false)] });
    expect(result).toMatchObject({
      ok: false,
      code: 'no-credentials',
      message: 'auto (no policy set): no provider is usable and the fallback "claude" has no credentials: set CLAUDE_KEY',
    });
  });

  it('an explicit choice accepts credentials that auto does not (a stored login, not a key)', () => {
    const storedLogin: ProviderProbe = { ...ok('claude'), autoCredentials: false };
    expect(select({ session: 'claude', probes: [storedLogin, ok('codex')] })).toMatchObject({ ok: true, provider: 'claude' });
    expect(select({ probes: [storedLogin, ok('codex')] })).toMatchObject({ ok: true, provider: 'codex' });
  });

  it('auto fails when even the fallback is not installed', () => {
    const result = select({ probes: [missing('claude'), ok('mock', false)] });
    expect(result).toMatchObject({ ok: false, code: 'not-installed', message: expect.stringContaining('fallback "claude" is not installed') });
  });

  it('auto uses the configured fallback (pincer chat: mock)', () => {
    const result = select({ probes: [missing('claude'), ok('mock', false)], fallback: 'mock' });
    expect(result).toMatchObject({ ok: true, provider: 'mock' });
  });

  it('describes the decision with every candidate', () => {
    const line = describeSelection(select({ probes: [noKey('claude'), missing('codex'), ok('opencode')] }));
    expect(line).toMatch(/^provider opencode: auto \(no policy set\)/);
    expect(line).toContain('claude: no credentials (set CLAUDE_KEY)');
    expect(line).toContain('codex: not installed (codex binary not found)');
    expect(line).toContain('opencode: ok');
  });
});

describe('the registry with this build', () => {
  it('resolves mock explicitly and through its alias', () => {
    expect(resolveProvider('mock', {}).name).toBe('mock');
    expect(resolveProvider('ECHO', {}).name).toBe('mock');
  });

  it('uses PINCER_AUTO_FALLBACK for auto when nothing is usable', () => {
    const env = { PATH: '', PINCER_AUTO_FALLBACK: 'mock' };
    expect(resolveProvider(undefined, env)).toMatchObject({ name: 'mock', reason: expect.stringContaining('falling back to mock') });
  });

  it('fails an explicit unknown name with a ProviderError of code unknown', () => {
    let caught: unknown;
    try {
      resolveProvider('claud', {});
    } catch (err) {
      caught = err;
    }
    expect(isProviderError(caught) && caught.reason).toBe('unknown');
    expect((caught as Error).message).toMatch(/^unknown provider "claud" \(known: claude, codex, opencode, mock/);
  });
});

describe('the runner applies the policy', () => {
  const cases = [
    {
      case: 'a model entry',
      config: { model: 'tiny', models: { tiny: { provider: 'echo' } } },
      line: /\[runner\] provider mock: model entry "tiny" "echo" \[candidates: claude: .*; mock: ok; pincer: ok\]/,
    },
    { case: 'the group policy', config: { groupProvider: 'Mock' }, line: /\[runner\] provider mock: group policy "Mock" \[candidates: / },
    {
      case: 'a host-published config',
      config: { provider: 'mock', generation: 7 },
      line: /\[runner\] ready: provider mock \(session policy "mock"\), .*, config generation 7\n/,
    },
  ];
  it.each(cases)('logs the decision for $case', async ({ config, line }) => {
    const s = createTestSession();
    fs.writeFileSync(s.paths.config, JSON.stringify(config));
    const runner = startRunner(s.paths.root, { AGENT_PROVIDER: '' });
    await runner.ready();
    expect(runner.stderr()).toMatch(line);
    expect(await runner.stop()).toBe(0);
  });

  it('exits 2 with one line when the configured provider cannot run here', () => {
    const s = createTestSession();
    s.db.close();
    const result = spawnSync(process.execPath, [BUILT_CLI, 'runner'], {
      env: { PATH: process.env.PATH, AGENT_PROVIDER: 'claude-code', TZ: 'UTC', PINCER_WORKSPACE: s.paths.root, CLAUDE_CONFIG_DIR: s.paths.root },
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(result.status).toBe(2);
    // No key, no cloud switch, no stored login: refused, never replaced by another provider.
    expect(result.stderr.replace(/^\S+Z /, '')).toBe(
      '[runner] error: provider "claude" (session policy "claude-code") has no credentials: set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_AUTH_TOKEN\n',
    );
  });
});

describe('runtime selection by model route', () => {
  // The real registry and route resolver; codex and claude are installed in this repository.
  const key = { PATH: '', OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' };
  const openai = { ...key, PINCER_MODEL: 'openai/gpt-5' };
  /** A runner's environment behind the host's credential proxy standing in for `upstream`. */
  const proxied = (upstream: string) => ({
    PATH: '',
    OPENAI_API_KEY: 'pincer-placeholder-x',
    OPENAI_BASE_URL: 'http://127.0.0.1:9/openai',
    PINCER_UPSTREAM_OPENAI_BASE_URL: upstream,
    PINCER_CREDENTIAL_PROXY: '1',
  });
  const cases: { rule: string; env: Record<string, string>; policy?: Parameters<typeof selectProviderFor>[0]; provider: string; source?: string }[] = [
    { rule: 'auto: the official HTTPS Responses route may go to Codex', env: openai, provider: 'codex' },
    { rule: 'auto: so may the ChatGPT Responses route', env: { ...openai, OPENAI_BASE_URL: 'https://chatgpt.com/backend-api' }, provider: 'codex' },
    { rule: 'auto: a custom endpoint stays on the built-in runtime', env: { ...openai, OPENAI_BASE_URL: 'http://127.0.0.1:8000/v1' }, provider: 'pincer' },
    {
      rule: 'auto: a Completions adapter on the official endpoint stays built-in',
      env: openai,
      policy: { models: { 'openai/gpt-5': { api: 'openai-completions' } } },
      provider: 'pincer',
    },
    {
      rule: 'auto: authored request headers stay built-in',
      env: openai,
      policy: { modelProviders: { openai: { headers: { 'x-team': 'a' } } } },
      provider: 'pincer',
    },
    {
      rule: 'auto: a provider prefix alone selects no harness (anthropic is not Claude Code)',
      env: { ...key, PINCER_MODEL: 'anthropic/claude-sonnet-4-5' },
      provider: 'pincer',
    },
    {
      rule: 'auto: a model name alone selects no harness',
      env: { ...key, PINCER_MODEL: 'local/codex', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' },
      provider: 'pincer',
    },
    {
      rule: 'a model entry wins over a provider entry',
      env: openai,
      policy: { models: { 'openai/gpt-5': { provider: 'pincer' } }, modelProviders: { openai: { provider: 'codex' } } },
      provider: 'pincer',
      source: 'model',
    },
    {
      rule: 'a provider entry applies to all its models',
      env: openai,
      policy: { modelProviders: { openai: { provider: 'pi' } } },
      provider: 'pincer',
      source: 'model-provider',
    },
    {
      rule: 'a provider entry of "default" is auto',
      env: openai,
      policy: { modelProviders: { openai: { provider: 'default' } } },
      provider: 'codex',
      source: 'auto',
    },
    { rule: 'codex-app-server normalises to codex', env: openai, policy: { session: 'codex-app-server' }, provider: 'codex', source: 'session' },
    { rule: 'openclaw normalises to pincer', env: openai, policy: { session: 'OpenClaw' }, provider: 'pincer', source: 'session' },
    { rule: 'builtin normalises to pincer', env: openai, policy: { group: 'builtin' }, provider: 'pincer', source: 'group' },
    {
      rule: 'the session policy beats the model entry',
      env: openai,
      policy: { session: 'pincer', models: { 'openai/gpt-5': { provider: 'codex' } } },
      provider: 'pincer',
      source: 'session',
    },
    {
      rule: 'behind the credential proxy the route is decided on the upstream: official Responses may still go to Codex',
      env: { ...proxied('https://api.openai.com/v1'), PINCER_MODEL: 'openai/gpt-5' },
      provider: 'codex',
    },
    {
      rule: 'behind the credential proxy a custom upstream stays on the built-in runtime',
      env: { ...proxied('http://127.0.0.1:8000/v1'), PINCER_MODEL: 'openai/gpt-5' },
      provider: 'pincer',
    },
    { rule: 'no model: auto keeps the SDK preference by credentials', env: { PATH: '', ANTHROPIC_API_KEY: 'k' }, provider: 'claude' },
  ];
  it.each(cases)('$rule', ({ env, policy, provider, source }) => {
    const selection = selectProviderFor(policy ?? {}, env);
    expect(selection).toMatchObject({ ok: true, provider, ...(source ? { source } : {}) });
  });

  it('says why auto chose a harness or the built-in runtime', () => {
    expect(describeSelection(selectProviderFor({}, openai))).toMatch(
      /^provider codex: auto \(no policy set\): harness codex supports the route openai\/gpt-5 via openai-responses at https:\/\/api\.openai\.com\/v1 \(official\)/,
    );
    const local = selectProviderFor({}, { PATH: '', PINCER_MODEL: 'local/qwen3', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' });
    expect(local).toMatchObject({
      ok: true,
      provider: 'pincer',
      reason: expect.stringContaining('the built-in runtime for local/qwen3 via openai-completions'),
    });
  });

  it('connects through the proxy but names the upstream it stands for', () => {
    const route = resolveModelRoute({ ref: 'openai/gpt-5', env: proxied('https://api.openai.com/v1') });
    expect(route).toMatchObject({
      api: 'openai-responses',
      official: 'openai-platform',
      baseUrl: 'https://api.openai.com/v1',
      via: 'http://127.0.0.1:9/openai',
    });
    expect(describeRoute(route)).toBe(
      "openai/gpt-5 via openai-responses at https://api.openai.com/v1 (official, through the host's credential proxy at http://127.0.0.1:9/openai)",
    );
    // A model entry's own base URL is not the proxy's upstream: it is used as written.
    const own = resolveModelRoute({ ref: 'local/q', models: { 'local/q': { baseUrl: 'http://10.0.0.2:8000/v1' } }, env: proxied('http://127.0.0.1:8000/v1') });
    expect(own).toMatchObject({ baseUrl: 'http://10.0.0.2:8000/v1', via: undefined });
  });

  it.each([
    { policy: {}, why: 'auto' },
    { policy: { session: 'codex' }, why: 'an explicit choice' },
  ])('refuses plaintext HTTP to an official endpoint ($why)', ({ policy }) => {
    const selection = selectProviderFor(policy, { ...openai, OPENAI_BASE_URL: 'http://api.openai.com/v1' });
    expect(selection).toMatchObject({
      ok: false,
      code: 'insecure-route',
      message: expect.stringContaining('refusing plaintext HTTP to the official endpoint api.openai.com'),
    });
  });

  it('with no key at all, auto falls back (pincer chat: mock) and says why', () => {
    const selection = selectProviderFor({}, { PATH: '', PINCER_MODEL: 'anthropic/claude-sonnet-4-5', PINCER_AUTO_FALLBACK: 'mock' });
    expect(selection).toMatchObject({ ok: true, provider: 'mock' });
    expect(selection.ok && selection.reason).toContain(
      'the built-in runtime has no credentials: set ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN): no provider is usable, falling back to mock',
    );
    expect(selectProviderFor({}, { PATH: '', PINCER_AUTO_FALLBACK: 'mock' })).toMatchObject({
      ok: true,
      provider: 'mock',
      reason: expect.stringContaining('falling back to mock'),
    });
  });
});
