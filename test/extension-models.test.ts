import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AgentGroup } from '../src/host/central-db/types.js';
import { readCredentials } from '../src/host/generations/credentials.js';
import { declaredModels } from '../src/host/generations/extensions.js';
import { GenerationPublisher } from '../src/host/generations/publisher.js';
import { registerBuiltInProviders } from '../src/providers/index.js';
import type { Logger } from '../src/shared/log.js';

/**
 * Extensions' models as the group folder's package.json declares them (`pincer.models`): read as data, part of the
 * generation's inputs (a change publishes the next generation, an unusable one fails the build once and keeps the last
 * good generation), and in the catalogue with their harness.
 */
registerBuiltInProviders();

const GROUP: AgentGroup = {
  id: 'g1',
  name: 'main',
  folder: 'main',
  provider: 'parrot',
  model: null,
  sessionMode: 'shared',
  timezone: 'UTC',
  configGeneration: 1,
  admins: [],
  triggerRules: { groups: 'mention', allowedUsers: [] },
  mcpServers: {},
  createdAt: '2026-12-01T00:00:00.000Z',
};

function folder(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-extmodels-'));
}

function declare(dir: string, models: unknown): void {
  fs.writeFileSync(path.join(dir, 'package.json.tmp'), JSON.stringify({ pincer: { models } }));
  fs.renameSync(path.join(dir, 'package.json.tmp'), path.join(dir, 'package.json'));
}

describe("extensions' models", () => {
  it('reads the declaration; none without a manifest or key; an unusable one in one line naming the file', () => {
    const dir = folder();
    expect(declaredModels(dir)).toEqual({ models: [], digest: '' });
    declare(dir, [{ ref: 'echo/parrot-1', harness: 'parrot', contextWindow: 8000 }]);
    const first = declaredModels(dir);
    expect(first.models).toEqual([{ ref: 'echo/parrot-1', harness: 'parrot', contextWindow: 8000 }]);
    expect(first.digest).toMatch(/^[0-9a-f]{16}$/);
    declare(dir, [{ ref: 'echo/parrot-2', harness: 'parrot' }]);
    expect(declaredModels(dir).digest).not.toBe(first.digest);
    declare(dir, [{ ref: 'no-slash', harness: 'parrot' }]);
    expect(() => declaredModels(dir)).toThrow(/package\.json: "pincer\.models"\.0\.ref: a "<provider>\/<model>" reference/);
    declare(dir, [{ ref: 'echo/x', harness: 'parrot', price: 1 }]);
    expect(() => declaredModels(dir)).toThrow(/"pincer\.models"\.0/);
  });

  it('a declaration joins the catalogue with its harness; a change publishes the next generation; a bad one keeps it', () => {
    const dir = folder();
    const lines: string[] = [];
    const log: Logger = { debug: () => undefined, info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(`error: ${m}`) };
    const publisher = new GenerationPublisher({
      readCredentials: (previous) => readCredentials({}, () => new Map(), previous),
      groups: () => [GROUP],
      hasExtensions: () => true,
      extensionModels: () => declaredModels(dir),
      log,
    });
    declare(dir, [{ ref: 'echo/parrot-1', harness: 'parrot', name: 'Parrot 1' }]);
    publisher.publishAllNow();
    const first = publisher.admit(GROUP);
    expect(first.number).toBe(1);
    expect(first.catalogue.find((m) => m.ref === 'echo/parrot-1')).toMatchObject({ source: 'extension', harness: 'parrot', name: 'Parrot 1', available: true });
    expect(publisher.admit(GROUP)).toBe(first); // nothing changed: the same snapshot

    declare(dir, [{ ref: 'echo/parrot-2', harness: 'parrot' }]);
    const second = publisher.admit(GROUP);
    expect(second.number).toBe(2);
    expect(second.catalogue.some((m) => m.ref === 'echo/parrot-1')).toBe(false);
    expect(second.catalogue.find((m) => m.ref === 'echo/parrot-2')).toMatchObject({ source: 'extension', harness: 'parrot' });

    declare(dir, [{ ref: 'no-slash', harness: 'parrot' }]);
    expect(publisher.admit(GROUP)).toBe(second);
    const view = publisher.view(GROUP);
    expect(view).toMatchObject({ generation: 2, stale: true, lastFailure: { error: expect.stringMatching(/"pincer\.models"\.0\.ref/) } });
    expect(lines.filter((l) => l.startsWith('error: ')).length).toBe(1); // failed once, not again while unchanged
  });
});
