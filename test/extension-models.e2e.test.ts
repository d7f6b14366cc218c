import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Extensions' models enter the group's generation through a real host (`pincer host --http 0`, real runners): a group
 * whose runtime only an extension registers (`parrot`, examples/extension/) cannot start until the extension is
 * there; adding it to the group folder, with the models its package.json declares, publishes the next generation
 * — the models in the catalogue with their harness — and the waiting message is answered by that harness, with no
 * restart. A declaration that is not usable keeps that generation serving and says why.
 */
const EXAMPLE = fileURLToPath(new URL('../examples/extension/index.mjs', import.meta.url));

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

function writeAtomic(file: string, text: string): void {
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}

describe("extensions' models in the generation", { timeout: 180_000 }, () => {
  it('an extension added to a group: its models in the catalogue, its harness runs the next turn, no restart', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    const host = await startHost({ AGENT_PROVIDER: 'parrot' }, home);
    const models = async (): Promise<Record<string, unknown>> => (await host.request('GET', '/v1/groups/main/models')).body;
    expect(await models()).toMatchObject({ generation: null, lastFailure: { error: expect.stringMatching(/unknown provider "parrot"/) } });
    const stream = host.stream('c');
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'hi' })).status).toBe(202);
    await waitFor('the start held', () => /runner start held \(1 in a row\)/.test(host.stderr()) || undefined, { timeoutMs: 60_000 });

    const group = path.join(home, 'groups', 'main');
    fs.mkdirSync(path.join(group, 'extensions'), { recursive: true });
    fs.copyFileSync(EXAMPLE, path.join(group, 'extensions', 'index.mjs'));
    writeAtomic(
      path.join(group, 'package.json'),
      JSON.stringify({ pincer: { models: [{ ref: 'echo/parrot-1', harness: 'parrot', name: 'Parrot 1', contextWindow: 8000 }] } }),
    );
    await stream.waitFor('the answer of the extension harness', (e) => e.event === 'chat' && /^parrot: .*>hi<\/message>/s.test(String(e.data.text)), 90_000);
    stream.close();
    const view = await models();
    expect(view).toMatchObject({ generation: 1, lastFailure: null });
    expect(view.models).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ ref: 'echo/parrot-1', source: 'extension', harness: 'parrot', name: 'Parrot 1', contextWindow: 8000, available: true }),
      ]),
    );

    // a declaration that is not usable: the generation keeps serving, the failure says why
    writeAtomic(path.join(group, 'package.json'), JSON.stringify({ pincer: { models: [{ ref: 'no-slash', harness: 'parrot' }] } }));
    const failed = await models();
    expect(failed).toMatchObject({
      generation: 1,
      stale: true,
      lastFailure: { error: expect.stringMatching(/"pincer\.models"\.0\.ref: a "<provider>\/<model>" reference/) },
    });
    expect(await host.stop()).toBe(0);
  });
});
