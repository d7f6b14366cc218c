import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startHost, stopAllHosts, TEST_TOKEN, type SseEvent } from './support/host-harness.js';
import { cpuTimeMs, mountTmpfs, tmpfsSkip, type Tmpfs } from './support/tmpfs.js';
import { waitFor } from './support/wait.js';

/**
 * A full disk under a running host: its session loop backs off (no CPU spin, a few log lines), it never exits, and
 * once space returns it recovers by itself and answers every message it accepted.
 */
let fsMount: Tmpfs | undefined;
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  fsMount?.unmount();
  fsMount = undefined;
});

const chats = (events: SseEvent[]) => events.filter((e) => e.event === 'chat');

describe.skipIf(tmpfsSkip !== undefined)(`a full disk${tmpfsSkip ? ` (skipped: ${tmpfsSkip})` : ''}`, () => {
  it('backs off without spinning, keeps running, and recovers when space returns', async () => {
    fsMount = mountTmpfs(24);
    const host = await startHost({}, fsMount.dir);
    const stream = host.stream('full');
    expect((await host.request('POST', '/v1/conversations/full/messages', { text: 'before' })).status).toBe(202);
    await stream.waitFor('the first answer', (e) => e.event === 'chat');
    const filler = fsMount.fill();
    // Messages sent while the disk is full: each is accepted (202) or refused with an error, never lost silently.
    const accepted: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await host.request('POST', '/v1/conversations/full/messages', { text: `during ${i} ${'x'.repeat(300_000)}` });
      if (res.status === 202) accepted.push(`during ${i}`);
      else expect(res).toEqual({ status: 507, body: { error: "the host's disk is full; the message was not stored", code: 'disk-full' } });
    }
    // the refusal says when to try again
    const refused = await fetch(`http://127.0.0.1:${host.port}/v1/conversations/full/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: `refused ${'x'.repeat(300_000)}` }),
    });
    if (refused.status === 202) accepted.push('refused');
    else expect([refused.status, refused.headers.get('retry-after')]).toEqual([507, '30']);
    expect(host.stderr()).toContain('http: refused, the disk is full'); // some message really met the full disk
    const linesBefore = host.stderr().split('\n').length;
    const cpuBefore = cpuTimeMs(host.child.pid!);
    const started = Date.now();
    await waitFor('3 s of a full disk', () => Date.now() - started >= 3000, { intervalMs: 100 });
    const cpuShare = (cpuTimeMs(host.child.pid!) - cpuBefore) / (Date.now() - started);
    const lines = host.stderr().split('\n').length - linesBefore;
    expect(host.child.exitCode).toBeNull();
    expect(cpuShare).toBeLessThan(0.5);
    expect(lines).toBeLessThan(100);
    fs.rmSync(filler);
    const after = await host.request('POST', '/v1/conversations/full/messages', { text: 'after' });
    expect(after.status).toBe(202);
    for (const text of [...accepted, 'after']) {
      await waitFor(`"${text}" answered`, () => chats(stream.events).some((e) => String(e.data.text).includes(text)), { timeoutMs: 45_000, intervalMs: 50 });
    }
    stream.close();
    expect(await host.stop()).toBe(0);
  }, 120_000);
});
