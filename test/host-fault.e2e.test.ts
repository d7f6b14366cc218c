import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { PID_SIGNALLED_RUNNER, startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Fault test through the host: runners SIGKILLed at random moments while messages arrive. Every message must end
 * completed and answered; none lost, none dropped. KILLS (default 8) can be raised by PINCER_FAULT_KILLS.
 */
const KILLS = Number(process.env.PINCER_FAULT_KILLS ?? 8);
const MIN_MESSAGES = 12;

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('host under runner kills', () => {
  it(`completes every message while its runner is SIGKILLed ${KILLS} times at random moments`, async () => {
    const host = await startHost({ ...PID_SIGNALLED_RUNNER, MOCK_DELAY_MS: '150', PINCER_MAX_TRIES: '100', PINCER_RUNNER_BACKOFF_MAX_MS: '400' });
    const stream = host.stream('chaos');
    let sessionId = '';
    const killedPids = new Set<number>();
    let killed = 0;
    let sent = 0;
    // Keep posting until there were KILLS kills (and at least MIN_MESSAGES messages); kill whatever runner is there.
    while (killed < KILLS || sent < MIN_MESSAGES) {
      const res = await host.request('POST', '/v1/conversations/chaos/messages', { text: `message-${sent}` });
      expect(res.status).toBe(202);
      sessionId = (res.body as { sessionId: string }).sessionId;
      sent++;
      if (killed >= KILLS) continue;
      await new Promise((r) => setTimeout(r, Math.random() * 300));
      const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { runner: { pid: number } | null }[];
      const pid = sessions[0]?.runner?.pid;
      // a runner killed before may still be listed until the host has reaped it: count each runner once
      if (!pid || killedPids.has(pid)) continue;
      try {
        process.kill(pid, 'SIGKILL');
        killedPids.add(pid);
        killed++;
      } catch {
        // it ended on its own meanwhile
      }
    }
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
    const rows = () => db.prepare(`SELECT * FROM messages_in WHERE kind = 'chat' ORDER BY seq`).all() as InboundRow[];
    await waitFor('every message completed', () => rows().length === sent && rows().every((r) => r.status === 'completed'), {
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    db.close();
    // delivery to the stream follows completion: wait for it rather than read the stream at once
    const answered = () =>
      stream.events
        .filter((e) => e.event === 'chat')
        .map((e) => String(e.data.text))
        .join('\n');
    await waitFor('every answer on the stream', () => Array.from({ length: sent }, (_, i) => `message-${i}<`).every((m) => answered().includes(m)), {
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    expect(killed).toBe(KILLS);
    expect(host.runnerPids().length).toBeGreaterThanOrEqual(killed);
    // each kill in flight shows as a retry in the host's log
    expect(host.stderr()).toMatch(/exited unexpectedly \(SIGKILL\)/);
    // nothing was given up (a crash notice may come: runners killed before they were ready count as crashes)
    expect(stream.events.filter((e) => e.event === 'notice' && /given up/.test(String(e.data.text)))).toHaveLength(0);
    stream.close();
    expect(await host.stop()).toBe(0);
  }, 90_000);
});
