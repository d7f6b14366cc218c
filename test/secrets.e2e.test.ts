import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretsStore } from '../src/host/secrets.js';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { descendants, environOf } from './support/processes.js';
import { runCli } from './support/runner-harness.js';

/**
 * The secrets store through a real host: a provider key kept only in `<home>/secrets.json` is what the credential
 * proxy puts on upstream requests (the fake model server sees it), while no runner environment, log or session file
 * holds it; a secrets file the host must refuse stops it at start with one line.
 */
const fakes: FakeAnthropic[] = [];
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (d: string): void => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && fs.readFileSync(full).includes(needle)) found.push(full);
    }
  };
  walk(dir);
  return found;
}

describe('the secrets store in a running host', { timeout: 120_000 }, () => {
  it('a key set with pincer secret set reaches the upstream and nothing else', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    const key = `sk-ant-secret-${process.pid}-${Date.now()}`;
    const fake = await startFakeAnthropic();
    fakes.push(fake);
    fake.script({ text: 'answered with the stored key' });
    new SecretsStore(home).set('ANTHROPIC_API_KEY', key);
    const host = await startHost(
      {
        AGENT_PROVIDER: 'pincer',
        PINCER_MODEL: 'anthropic/claude-sonnet-4-5',
        ANTHROPIC_BASE_URL: fake.url,
        PINCER_MODEL_MAX_RETRIES: '0',
        PINCER_IDLE_TIMEOUT_MS: '60000',
      },
      home,
    );
    const stream = host.stream('c');
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'hi' })).status).toBe(202);
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'answered with the stored key', 60_000);
    stream.close();
    expect(fake.modelRequests().map((r) => r.headers['x-api-key'])).toEqual([key]);

    for (const pid of descendants(host.child.pid!)) expect([pid, environOf(pid).includes(key)]).toEqual([pid, false]);
    const listed = await runCli(['secret', 'list'], { PATH: process.env.PATH, PINCER_HOME: home });
    expect(listed.stdout).toBe('ANTHROPIC_API_KEY\n');
    expect(await host.stop()).toBe(0);
    expect(host.stderr()).not.toContain(key);
    expect(filesContaining(path.join(home, 'sessions'), key)).toEqual([]);
    expect(filesContaining(path.join(home, 'logs'), key)).toEqual([]);
  });

  it('a secrets file that is not 0600 stops the host at start, in one line', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    fs.writeFileSync(path.join(home, 'secrets.json'), JSON.stringify({ ANTHROPIC_API_KEY: 'sk-visible' }), { mode: 0o644 });
    fs.chmodSync(path.join(home, 'secrets.json'), 0o644);
    await expect(startHost({}, home)).rejects.toThrow(/host exited early \(2\): (.*\n)?pincer: secrets file \S+ has mode 0644; it must be 0600/);
    const doctor = await runCli(['doctor'], { PATH: process.env.PATH, PINCER_HOME: home });
    expect(doctor.status).toBe(1);
    expect(doctor.stdout).toMatch(/✗ secrets: secrets file \S+ has mode 0644/);
    expect(doctor.stdout + doctor.stderr).not.toContain('sk-visible');
  });
});
