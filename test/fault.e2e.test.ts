import { afterEach, describe, expect, it } from 'vitest';
import { startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * Fault test (docs/reliability.md): the runner is SIGKILLed at random points while messages arrive; after every kill each message
 * is still there, and once the host's sweep puts `processing` rows back to `pending` (done here in SQL) a fresh runner
 * answers every one. CI runs PINCER_FAULT_RUNS kills (default 20); the bar is 200 with 0 lost.
 */
afterEach(async () => {
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

const RUNS = Number(process.env.PINCER_FAULT_RUNS ?? 20);

describe('runner killed with SIGKILL at random points', () => {
  it(`loses no message over ${RUNS} kills`, async () => {
    const s = createTestSession();
    const ids: string[] = [];
    const seen = { processing: 0, completed: 0 };
    for (let run = 0; run < RUNS; run++) {
      const runner = startRunner(s.paths.root, { MOCK_DELAY_MS: String(run % 3 === 0 ? 0 : 5) });
      // every fifth run is killed during start-up; the others once ready, mid-claim, mid-query or mid-write
      if (run % 5 !== 0) await runner.ready();
      for (let i = 0; i < 3; i++) ids.push(s.chat(`run ${run} message ${i}`).id);
      const delay = Math.floor(Math.random() * 25);
      const killAt = Date.now() + delay;
      await waitFor('kill time', () => Date.now() >= killAt, { intervalMs: 1 });
      await runner.kill('SIGKILL');
      const rows = s.allInbound();
      expect(rows).toHaveLength(ids.length);
      for (const row of rows) expect(['pending', 'processing', 'completed']).toContain(row.status);
      if (rows.some((row) => row.status === 'processing')) seen.processing += 1;
      if (rows.slice(-3).some((row) => row.status === 'completed')) seen.completed += 1;
      // what the host's sweep does for a dead runner's batch
      s.db.prepare(`UPDATE messages_in SET status = 'pending' WHERE status = 'processing'`).run();
    }
    const runner = startRunner(s.paths.root, { PINCER_LOG_LEVEL: 'error' });
    await waitFor('every message completed', () => s.allInbound().every((row) => row.status === 'completed'), { timeoutMs: 60_000, intervalMs: 20 });
    const answered = new Set(s.outbound().map((row) => row.in_reply_to));
    const texts = s
      .outboundContents()
      .map((c) => String(c.text))
      .join('\n');
    for (const id of ids) {
      const row = s.inbound(id);
      // every message reached the agent: it is in some answered prompt
      expect(texts).toContain(`${JSON.parse(row.content).text}</message>`);
    }
    expect(answered.size).toBeGreaterThan(0);
    // the kills really landed mid-batch, not only before or after the work
    expect(seen.processing).toBeGreaterThan(0);
    console.log(`[fault] ${RUNS} kills: ${seen.processing} with a batch in flight, ${seen.completed} after some answers; 0 lost`);
    await runner.stop();
  }, 300_000);
});
