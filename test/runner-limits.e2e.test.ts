import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { bwrapWorks } from '../src/host/runner-kind.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Resource limits of the default sandbox (bubblewrap), on a real host: a task script inside the runner tries to start
 * 400 processes, allocate 512 MiB and write a 32 MiB file, with limits of 128 processes, 256 MiB and 8 MiB. Each
 * attempt is stopped, the host keeps answering, and the session's next message still gets its reply.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

const LIMITS = {
  PINCER_RUNNER: 'bwrap',
  // the probe takes seconds; the harness's 300 ms would retry it while its processes still hold the limit
  PINCER_STALE_MS: '60000',
  PINCER_CONTAINER_PIDS: '128',
  PINCER_CONTAINER_MEMORY: '256m',
  PINCER_CONTAINER_FILE_SIZE: '8m',
};

/**
 * Runs in the sandbox (bash, in the agent group's folder). The fork loop runs in sh (dash): bash retries a refused fork for
 * seconds; dash gives up at once. The sleeps end by themselves before the next step.
 */
const PROBE = [
  'mkdir -p probe',
  `sh -c 'n=0; while [ $n -lt 400 ]; do sleep 5 & n=$((n+1)); echo $n > probe/started; done' 2> probe/fork-error`,
  'sleep 6',
  `node -e 'const a=[];for(let i=0;i<32;i++)a.push(Buffer.alloc(16<<20,1));console.log("allocated")' > probe/memory 2>&1`,
  'echo "exit $?" >> probe/memory',
  'head -c 33554432 /dev/zero > big.bin 2> /dev/null',
  'echo "exit $?" > probe/file',
  'stat -c %s big.bin >> probe/file',
  'rm -f big.bin',
  `echo '{"wakeAgent":false}'`,
].join('\n');

describe.skipIf(!bwrapWorks())('bubblewrap runner limits', { timeout: 180_000 }, () => {
  it('stop an agent that starts too many processes, allocates too much and writes too big a file; the host stays up', async () => {
    const host = await startHost(LIMITS);
    const task = await host.request('POST', '/v1/conversations/limits/tasks', {
      prompt: 'p',
      processAfter: new Date().toISOString(),
      script: PROBE,
    });
    expect(task.status).toBe(202);
    const sessionDir = host.sessionDir(task.body.sessionId as string);
    const db = openSessionDb(path.join(sessionDir, 'session.db'));
    const row = await waitFor(
      'the task to end',
      () => {
        const r = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(task.body.id) as InboundRow | undefined;
        return r && (r.status === 'completed' || r.status === 'failed') ? r : undefined;
      },
      { timeoutMs: 120_000 },
    );
    db.close();
    expect(row.status, `${row.last_error ?? ''}\n${host.stderr()}`).toBe('completed');
    const probe = (name: string): string => fs.readFileSync(path.join(path.dirname(findFile(host.home, 'started')), name), 'utf8');
    // processes: the pids cgroup refuses forks past 128 (the runner's own threads count too)
    expect(Number(probe('started'))).toBeLessThan(128);
    expect(probe('fork-error')).toMatch(/fork/i);
    // memory: the kernel kills the allocating process at 256 MiB (128 + SIGKILL)
    expect(probe('memory')).not.toContain('allocated');
    expect(probe('memory')).toContain('exit 137');
    // file size: the write stops at 8 MiB (128 + SIGXFSZ)
    expect(probe('file').split('\n')).toEqual(['exit 153', String(8 * 1024 * 1024), '']);
    // the host answers, and the conversation still works
    expect((await host.request('GET', '/v1/health')).status).toBe(200);
    const stream = host.stream('limits');
    expect((await host.request('POST', '/v1/conversations/limits/messages', { text: 'still there?' })).status).toBe(202);
    const reply = await stream.waitFor('the reply', (e) => e.event === 'chat');
    expect(reply.data.text).toContain('still there?</message>');
    // once the runner has ended, the chat is told that a limit stopped a process of its sandbox
    expect((await host.request('POST', `/v1/sessions/${task.body.sessionId as string}/stop`)).status).toBe(200);
    const history = host.stream('limits', { lastEventId: '0' }); // the runner may have ended (idle) before the stop
    const notice = await history.waitFor('the memory notice', (e) => e.event === 'notice' && String(e.data.text).includes('ran out of memory'), 30_000);
    history.close();
    expect(notice.data.text).toContain('the 256 MiB limit (PINCER_CONTAINER_MEMORY)');
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

function findFile(dir: string, name: string): string {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name === name) return path.join(entry.parentPath, entry.name);
  }
  throw new Error(`${name} not found under ${dir}`);
}
