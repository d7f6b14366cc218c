import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CentralStore, openCentralDb } from '../src/host/central-db/store.js';
import { loadHostConfig } from '../src/host/config.js';
import { readCredentials } from '../src/host/generations/credentials.js';
import { GenerationPublisher } from '../src/host/generations/publisher.js';
import { SessionDirectory } from '../src/host/sessions.js';
import { registerBuiltInProviders } from '../src/providers/index.js';
import { createLogger } from '../src/shared/log.js';

/**
 * A provider for this run (`--provider` without `--save`) in-process: the group reads with it, the central DB keeps
 * the saved one through other changes, an explicit provider change saves and ends it, and a generation built before
 * it is built again (the published one names the run's provider).
 */
registerBuiltInProviders();
const homes: string[] = [];
afterEach(() => {
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function setup(env: NodeJS.ProcessEnv = {}) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-run-provider-'));
  homes.push(home);
  const lines: string[] = [];
  const config = loadHostConfig({ TZ: 'UTC', PINCER_HOME: home, ...env }, env.FLAG ? { provider: env.FLAG, saveProvider: env.SAVE === '1' } : {});
  const store = new CentralStore(openCentralDb(path.join(home, 'pincer.db')), home);
  const sessions = new SessionDirectory(
    store,
    config,
    createLogger('host', (line) => lines.push(line)),
  );
  return { home, store, sessions, lines, config };
}

function savedRow(store: CentralStore): { provider: string; config_generation: number } {
  return store.db.prepare("SELECT provider, config_generation FROM agent_groups WHERE name = 'main'").get() as { provider: string; config_generation: number };
}

describe('a provider for this run', () => {
  it('is read with the group and never written: a model change keeps the saved provider, a provider change ends it', () => {
    const { store, sessions } = setup();
    const group = sessions.ensureDefaultGroup()!;
    store.runGroupOn(group.id, 'mock');
    expect(store.getAgentGroup(group.id)).toMatchObject({ provider: 'mock', savedProvider: 'auto' });
    store.updateAgentGroup(group.id, { model: 'anthropic/claude-sonnet-4-5' });
    expect(savedRow(store)).toEqual({ provider: 'auto', config_generation: 2 });
    expect(store.findAgentGroup('main')).toMatchObject({ provider: 'mock', savedProvider: 'auto' });
    store.updateAgentGroup(group.id, { provider: 'codex' });
    expect(store.getAgentGroup(group.id)).toMatchObject({ provider: 'codex' });
    expect(store.getAgentGroup(group.id)!.savedProvider).toBeUndefined();
    // the saved provider itself: nothing of this run
    store.runGroupOn(group.id, 'codex');
    expect(store.listAgentGroups()[0]!.savedProvider).toBeUndefined();
    store.db.close();
  });

  it.each([
    ['--provider', { FLAG: 'mock' }, { provider: 'auto', config_generation: 1 }, 'agent group main: provider mock for this run (--provider; saved: auto)'],
    ['--provider --save', { FLAG: 'mock', SAVE: '1' }, { provider: 'mock', config_generation: 1 }, undefined],
    ['AGENT_PROVIDER', { AGENT_PROVIDER: 'mock' }, { provider: 'mock', config_generation: 1 }, undefined],
  ])('%s on a new home: the group is created with the saved provider and runs on the flag', (_case, env, row, line) => {
    const { store, sessions, lines } = setup(env);
    sessions.ensureDefaultGroup();
    sessions.applyRunProvider();
    expect(savedRow(store)).toEqual(row);
    expect(store.findAgentGroup('main')!.provider).toBe('mock');
    if (line) expect(lines.some((l) => l.includes(line))).toBe(true);
    store.db.close();
  });

  it('--save on a group that exists saves it as a new configuration generation', () => {
    const first = setup();
    first.sessions.ensureDefaultGroup();
    first.store.db.close();
    const config = loadHostConfig({ TZ: 'UTC', PINCER_HOME: first.home }, { provider: 'mock', saveProvider: true });
    const store = new CentralStore(openCentralDb(path.join(first.home, 'pincer.db')), first.home);
    const sessions = new SessionDirectory(
      store,
      config,
      createLogger('host', () => undefined),
    );
    sessions.ensureDefaultGroup();
    sessions.applyRunProvider();
    expect(savedRow(store)).toEqual({ provider: 'mock', config_generation: 2 });
    expect(store.findAgentGroup('main')!.savedProvider).toBeUndefined();
    store.db.close();
  });

  it('set after a generation was published, the next admission builds one for it', () => {
    const { store, sessions } = setup();
    const group = sessions.ensureDefaultGroup()!;
    const publisher = new GenerationPublisher({
      readCredentials: (previous) => readCredentials({}, () => new Map(), previous),
      groups: () => store.listAgentGroups(),
      hasExtensions: () => false,
      log: createLogger('host', () => undefined),
    });
    publisher.publishAllNow();
    expect(publisher.admit(store.getAgentGroup(group.id)!)).toMatchObject({ number: 1, inputs: 'config 1, credentials 1' });
    store.runGroupOn(group.id, 'mock');
    const next = publisher.admit(store.getAgentGroup(group.id)!);
    expect(next).toMatchObject({ number: 2, inputs: 'config 1, provider mock for this run, credentials 1', selection: { ok: true, provider: 'mock' } });
    store.db.close();
  });
});
