import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { runnerUnder } from '../src/container/bwrap.js';
import { onPath } from './support/dockerd.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * `pincer host` with PINCER_RUNNER=bwrap: the host's launch seam (src/host/launchers.ts) takes src/container's
 * bubblewrap launcher as it is. The runner answers from inside the sandbox and is gone when the host stops.
 */
const skip = onPath('bwrap') ? undefined : 'bubblewrap is not installed (.ci/run installs it as root)';
if (skip) console.warn(`[container] skipping host bwrap test: ${skip}`);

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

/** Whether `pid` is a live process (not gone, not a zombie waiting to be reaped). */
function alive(pid: number): boolean {
  try {
    return !/^State:\s*Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

describe.skipIf(skip !== undefined)('pincer host with bubblewrap runners', () => {
  it('answers through a runner in the sandbox, which sees only loopback, and stops it with the host', async () => {
    const host = await startHost({ PINCER_RUNNER: 'bwrap' });
    const stream = host.stream('boxed');
    const res = await host.request('POST', '/v1/conversations/boxed/messages', { text: 'hello sandbox' });
    expect(res.status).toBe(202);
    const reply = await stream.waitFor('the reply', (e) => e.event === 'chat');
    expect(reply.data.text).toContain('hello sandbox</message>');
    expect(host.stderr()).toContain('[container] started bwrap runner');
    const [bwrapPid] = host.runnerPids();
    const inside = await waitFor('the sandboxed runner', () => runnerUnder(bwrapPid!));
    const interfaces = fs
      .readFileSync(`/proc/${inside}/net/dev`, 'utf8')
      .split('\n')
      .slice(2)
      .map((l) => l.split(':')[0]!.trim())
      .filter(Boolean);
    expect(interfaces).toEqual(['lo']);
    stream.close();
    expect(await host.stop()).toBe(0);
    expect(host.stderr()).toMatch(/runner \d+ for \S+ stopped \(0\)/);
    expect(alive(inside)).toBe(false);
  });
});
