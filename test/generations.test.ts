import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentGroup } from '../src/host/central-db/types.js';
import { isPincerError } from '../src/shared/errors.js';
import { readCredentials } from '../src/host/generations/credentials.js';
import { GenerationPublisher } from '../src/host/generations/publisher.js';
import { SecretsStore } from '../src/host/secrets.js';
import { registerBuiltInProviders } from '../src/providers/index.js';
import type { Logger } from '../src/shared/log.js';

/**
 * The model-runtime generation owner in-process: built whole and frozen, published only when the whole build
 * succeeded, a failed build keeps the last good one serving and says why, an unchanged publish state fails at once
 * (retryable, no second build), a burst of changes publishes few generations, and no view ever holds a key.
 */
registerBuiltInProviders();

function group(over: Partial<AgentGroup> = {}): AgentGroup {
  return {
    id: 'g1',
    name: 'main',
    folder: 'main',
    provider: 'pincer',
    model: 'anthropic/claude-sonnet-4-5',
    sessionMode: 'shared',
    timezone: 'UTC',
    configGeneration: 1,
    admins: [],
    triggerRules: { groups: 'mention', allowedUsers: [] },
    mcpServers: {},
    createdAt: '2026-12-01T00:00:00.000Z',
    ...over,
  };
}

function setup(groups: AgentGroup[], env: NodeJS.ProcessEnv = { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/' }) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-gen-'));
  const secrets = new SecretsStore(home);
  const lines: string[] = [];
  const log: Logger = { debug: () => undefined, info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(`error: ${m}`) };
  let builds = 0;
  const current = { groups };
  const published: number[] = [];
  const publisher = new GenerationPublisher({
    readCredentials: (previous) => readCredentials(env, () => secrets.read(), previous),
    groups: () => current.groups,
    hasExtensions: () => (builds++, false),
    log,
    onPublish: (generation) => published.push(generation.number),
  });
  return { home, secrets, publisher, lines, current, published, builds: () => builds };
}

describe('model-runtime generations', () => {
  it('publishes one whole, frozen generation per group: selection, registry and catalogue from the same credentials', () => {
    const { secrets, publisher } = setup([group(), group({ id: 'g2', name: 'codex-team', folder: 'c', provider: 'codex', model: null })]);
    secrets.set('ANTHROPIC_API_KEY', 'sk-ant-first');
    publisher.publishAllNow();
    const main = publisher.admit(group());
    expect(main.number).toBe(1);
    expect(Object.isFrozen(main) && Object.isFrozen(main.catalogue) && Object.isFrozen(main.catalogue[0])).toBe(true);
    expect(main.selection).toMatchObject({ ok: true, provider: 'pincer' });
    const sonnet = main.catalogue.find((m) => m.ref === 'anthropic/claude-sonnet-4-5')!;
    expect(sonnet).toMatchObject({ configured: true, available: true, harness: 'pincer', api: 'anthropic-messages', viaProxy: true });
    expect(sonnet.price?.input).toBeGreaterThan(0);
    expect(main.catalogue.find((m) => m.ref === 'openai/gpt-5')).toMatchObject({ available: false, unavailable: expect.stringMatching(/OPENAI_API_KEY/) });
    expect(main.credentials.upstreams.anthropic?.auth?.value).toBe('sk-ant-first');
    const codex = publisher.admit(group({ id: 'g2', name: 'codex-team', folder: 'c', provider: 'codex', model: null }));
    expect(codex.selection).toMatchObject({ ok: false, code: 'no-credentials' });
    const view = publisher.view(group());
    expect(view).toMatchObject({ generation: 1, stale: false, lastFailure: null, credentials: [{ name: 'ANTHROPIC_API_KEY', source: 'secrets' }] });
    expect(JSON.stringify(view)).not.toContain('sk-ant-first');
  });

  it('a rotated key publishes the next generation; a reader keeps the one it holds', async () => {
    const { secrets, publisher } = setup([group()]);
    secrets.set('ANTHROPIC_API_KEY', 'sk-ant-old');
    publisher.publishAllNow();
    const held = publisher.admit(group());
    secrets.set('ANTHROPIC_API_KEY', 'sk-ant-new');
    await publisher.republish('test');
    const next = publisher.admit(group());
    expect([held.number, next.number]).toEqual([1, 2]);
    expect(held.credentials.upstreams.anthropic?.auth?.value).toBe('sk-ant-old');
    expect(next.credentials.upstreams.anthropic?.auth?.value).toBe('sk-ant-new');
    // the same values again: nothing to publish
    await publisher.republish('test');
    expect(publisher.admit(group()).number).toBe(2);
  });

  it('a build that fails keeps the last good generation serving and says why', () => {
    const { publisher, lines, current } = setup([group()]);
    publisher.publishAllNow();
    const broken = group({ configGeneration: 2, model: 'openai/gpt-5', provider: 'claud' });
    current.groups = [broken];
    const served = publisher.admit(broken);
    expect(served.number).toBe(1);
    expect(served.model).toBe('anthropic/claude-sonnet-4-5');
    const view = publisher.view(broken);
    expect(view).toMatchObject({ generation: 1, stale: true, lastFailure: { error: expect.stringMatching(/^agent group main: unknown provider "claud"/) } });
    expect(lines.some((l) => /error: model runtime: agent group main: unknown provider "claud".*\(generation 1 keeps serving\)/.test(l))).toBe(true);
  });

  it.each([
    ['an unknown runtime', { provider: 'claud' }, {}, /unknown provider "claud"/],
    ['a local model without a server', { model: 'local/qwen3' }, {}, /local models need OPENAI_BASE_URL/],
    ['plaintext HTTP to an official endpoint', { model: 'openai/gpt-5' }, { OPENAI_BASE_URL: 'http://api.openai.com/v1' }, /refusing plaintext HTTP/],
  ])(
    'with no good generation, %s fails admission at once and again without rebuilding while nothing changed',
    (_case, over: Partial<AgentGroup>, env: NodeJS.ProcessEnv, why) => {
      const bad = group({ ...over });
      const { publisher, builds } = setup([bad], env);
      publisher.publishAllNow();
      const first = builds();
      for (let i = 0; i < 3; i++) {
        let caught: unknown;
        try {
          publisher.admit(bad);
        } catch (err) {
          caught = err;
        }
        expect(isPincerError(caught, 'not-ready')).toBe(true);
        expect((caught as Error).message).toMatch(why);
      }
      expect(builds()).toBe(first); // the unchanged publish state was not built again
      const fixed = group({ configGeneration: 2 });
      expect(publisher.admit(fixed).number).toBe(1);
      expect(builds()).toBe(first + 1);
    },
  );

  it('a secrets file the host must refuse keeps the previous credentials and generation, in one line without the value', async () => {
    const { home, secrets, publisher, lines } = setup([group()]);
    secrets.set('ANTHROPIC_API_KEY', 'sk-ant-good');
    publisher.publishAllNow();
    fs.chmodSync(path.join(home, 'secrets.json'), 0o644);
    await publisher.republish('test');
    const view = publisher.view(group());
    expect(view.generation).toBe(1);
    expect(view.lastFailure?.error).toMatch(/secrets file .* has mode 0644; it must be 0600/);
    expect(publisher.admit(group()).credentials.upstreams.anthropic?.auth?.value).toBe('sk-ant-good');
    expect(lines.filter((l) => l.includes('0644'))).toHaveLength(1);
    expect(lines.join('\n')).not.toContain('sk-ant-good');
    fs.chmodSync(path.join(home, 'secrets.json'), 0o600);
    await publisher.republish('test');
    expect(publisher.view(group()).lastFailure).toBeNull();
  });

  it('50 changes in a burst publish at most a few generations, each whole, ending on the last value', async () => {
    const groups = Array.from({ length: 20 }, (_, i) => group({ id: `g${i}`, name: `group-${i}`, folder: `f${i}` }));
    const { secrets, publisher, published } = setup(groups);
    secrets.set('ANTHROPIC_API_KEY', 'sk-ant-0');
    publisher.publishAllNow();
    const passes: Promise<void>[] = [];
    for (let i = 1; i <= 50; i++) {
      secrets.set('ANTHROPIC_API_KEY', `sk-ant-${i}`);
      passes.push(publisher.republish('burst'));
    }
    await Promise.all(passes);
    for (const g of groups) {
      const generation = publisher.admit(g);
      expect(generation.credentials.upstreams.anthropic?.auth?.value).toBe('sk-ant-50');
      expect(generation.number).toBeLessThanOrEqual(3);
      expect(generation.inputs).toBe(`config 1, credentials ${generation.credentials.version}`);
    }
    expect(published.length).toBeLessThanOrEqual(groups.length * 3);
  });
});
