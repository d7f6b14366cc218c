import { describe, expect, it } from 'vitest';
import { codexOptions, readCodexSettings } from '../src/providers/codex/config.js';
import { openCodeConfig, readOpenCodeSettings } from '../src/providers/opencode/config.js';
import { buildModel } from '../src/providers/pincer/model.js';
import type { PrepareInput, QueryInput } from '../src/providers/types.js';

/**
 * Behind the host's credential proxy a keyless model server (a local one) is reached with the session's placeholder
 * as the key (`PINCER_CREDENTIAL_PROXY_KEY`), so the proxy counts the calls as the session's; never sent anywhere
 * but the proxy, and no key variable appears where there was none (test/runner-modes.e2e.test.ts: the calls in the
 * ledger, in every runner mode).
 */
const PLACEHOLDER = 'pincer-placeholder-abc';
const PROXIED = {
  OPENAI_BASE_URL: 'http://127.0.0.1:4000/openai',
  PINCER_UPSTREAM_OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1',
  PINCER_CREDENTIAL_PROXY: '1',
  PINCER_CREDENTIAL_PROXY_KEY: PLACEHOLDER,
};
const input = { systemPrompt: '', mcpServers: {}, env: {} } as unknown as QueryInput & PrepareInput;

describe('the key a client presents to a keyless server', () => {
  it.each([
    ['through the proxy: the placeholder', PROXIED, {}, PLACEHOLDER],
    ['not behind the proxy: none that means anything', { OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' }, {}, 'not-needed'],
    [
      'a model entry of its own (not through the proxy): never the placeholder',
      PROXIED,
      { models: { 'local/qwen3:8b': { baseUrl: 'http://10.0.0.5:11434/v1' } } },
      'not-needed',
    ],
  ])('the built-in runtime, %s', (_name, env, entries, key) => {
    expect(buildModel('local/qwen3:8b', entries, env).apiKey).toBe(key);
  });

  it('Codex and OpenCode present the placeholder to the proxy, or their own key when they have one', () => {
    const codex = (env: Record<string, string>) => codexOptions(readCodexSettings({ ...env, CODEX_MODEL: 'm' }), input, '/tmp/codex-home').env?.OPENAI_API_KEY;
    expect(codex(PROXIED)).toBe(PLACEHOLDER);
    expect(codex({ ...PROXIED, OPENAI_API_KEY: 'pincer-placeholder-keyed' })).toBe('pincer-placeholder-keyed');
    expect(codex({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1', PINCER_CREDENTIAL_PROXY_KEY: PLACEHOLDER })).toBe('unused');
    const opencode = (env: Record<string, string>) => {
      const provider = openCodeConfig(readOpenCodeSettings({ ...env, OPENCODE_MODEL: 'm' }), input).provider?.pincer;
      return (provider?.options as { apiKey?: string } | undefined)?.apiKey;
    };
    expect(opencode(PROXIED)).toBe(PLACEHOLDER);
    expect(opencode({ OPENAI_BASE_URL: 'http://127.0.0.1:11434/v1' })).toBe('unused');
  });
});
