import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { BUILT_CLI, runCli } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Readers in other processes read what the running host published (`<home>/catalogue/`), never their own look-ups:
 * `pincer doctor` and `pincer models` show a group's generation and the runtime it starts with, and the next call
 * after a publication (a key set with `pincer secret set`) shows the new one. The web page's Doctor view (GET
 * /v1/doctor) reads the same.
 */
const fakes: FakeAnthropic[] = [];
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

describe('readers of the published generation', { timeout: 180_000 }, () => {
  it('pincer doctor, pincer models and GET /v1/doctor see the new generation after a publication', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    const fake = await startFakeAnthropic();
    fakes.push(fake);
    const host = await startHost({ AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'anthropic/claude-sonnet-4-5', ANTHROPIC_BASE_URL: fake.url }, home);
    // the CLI's own environment has no key and no model: what it shows comes from the host's publication
    const cliEnv = { PATH: process.env.PATH, PINCER_HOME: home, HOME: home };
    const doctor = async (): Promise<{ status: number | null; stdout: string }> => runCli(['doctor'], cliEnv);

    const before = await doctor();
    expect(before.stdout).toMatch(
      /agent group main \(.*\)\n {2}model runtime: generation 1, built .*; credentials: none\n {2}✗ provider: provider "pincer" .*has no credentials/,
    );
    expect(before.status).toBe(1);

    const set = spawnSync(process.execPath, [BUILT_CLI, 'secret', 'set', 'ANTHROPIC_API_KEY'], {
      env: cliEnv,
      input: 'sk-ant-readers\n',
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(set.status, set.stderr).toBe(0);
    await waitFor('generation 2 published', () => /agent group main generation 2 /.test(host.stderr()) || undefined, { timeoutMs: 30_000 });

    const after = await doctor();
    expect(after.stdout).toMatch(
      /agent group main \(.*\)\n {2}model runtime: generation 2, built .*; credentials: ANTHROPIC_API_KEY \(secrets\)\n {2}provider: pincer — /,
    );
    expect(after.stdout).toMatch(/^pincer host would run: pincer — .*\(agent group main\)$/m);
    const models = await runCli(['models', '--json'], cliEnv);
    expect(JSON.parse(models.stdout)).toMatchObject({ groups: [{ group: 'main', generation: 2 }] });
    const web = await host.request('GET', '/v1/doctor');
    expect(web.status).toBe(200);
    expect(String(web.body.text)).toMatch(/model runtime: generation 2, /);
    for (const text of [before.stdout, after.stdout, models.stdout, JSON.stringify(web.body)]) expect(text).not.toContain('sk-ant-readers');
    expect(await host.stop()).toBe(0);
  });
});
