import Database from 'better-sqlite3';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startHost, stopAllHosts, type HostHandle, type SseEvent } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * SSE through the real host: replay after Last-Event-ID without gaps (paged), a `reset` for an id the host never
 * issued, new clients start live, and a client that stops reading is disconnected with a reason and resumes.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

/** Store `count` chat events for a conversation straight in the host's durable mailbox (as delivery does). */
function storeEvents(host: HostHandle, conversation: string, count: number): void {
  const db = new Database(path.join(host.home, 'pincer.db'));
  db.pragma('busy_timeout = 5000');
  const insert = db.prepare('INSERT INTO http_outbox (conversation, data, created_at) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= count; i++)
      insert.run(conversation, JSON.stringify({ data: { type: 'chat', text: `stored ${i}` }, files: [] }), new Date().toISOString());
  })();
  db.close();
}

const chats = (events: SseEvent[]) => events.filter((e) => e.event === 'chat');

describe('SSE streams', () => {
  it('replays every event after Last-Event-ID, page by page, then goes live without a gap', async () => {
    const host = await startHost();
    storeEvents(host, 'replay', 700);
    const stream = host.stream('replay', { lastEventId: '0' });
    await waitFor('700 replayed events', () => chats(stream.events).length >= 700, { timeoutMs: 20_000 });
    const ids = chats(stream.events).map((e) => Number(e.id));
    expect(ids).toEqual(Array.from({ length: 700 }, (_, i) => ids[0]! + i));
    // A reconnect after event 300 gets exactly 301…700; GET …/events pages the same history.
    const resumed = host.stream('replay', { lastEventId: String(ids[299]) });
    await waitFor('400 replayed events', () => chats(resumed.events).length >= 400, { timeoutMs: 20_000 });
    expect(chats(resumed.events).map((e) => Number(e.id))).toEqual(ids.slice(300));
    const page = await host.request('GET', '/v1/conversations/replay/events?after=0');
    expect(page.body).toMatchObject({ more: true, nextAfter: ids[499] });
    expect((await host.request('GET', `/v1/conversations/replay/events?after=${ids[499]}`)).body).toMatchObject({ more: false, nextAfter: ids[699] });
    // Then live: an answer arrives after the replayed history.
    expect((await host.request('POST', '/v1/conversations/replay/messages', { text: 'live now' })).status).toBe(202);
    const live = await stream.waitFor('the live reply', (e) => e.event === 'chat' && String(e.data.text).includes('live now'));
    expect(Number(live.id)).toBeGreaterThan(ids[699]!);
    stream.close();
    resumed.close();
    expect(await host.stop()).toBe(0);
  });

  it('a new client without Last-Event-ID starts live; an id the host never issued gets one reset event', async () => {
    const host = await startHost();
    storeEvents(host, 'fresh', 50);
    const stream = host.stream('fresh');
    const future = host.stream('fresh', { lastEventId: '999999' });
    const garbage = host.stream('fresh', { lastEventId: 'abc' });
    expect((await host.request('POST', '/v1/conversations/fresh/messages', { text: 'only this' })).status).toBe(202);
    await stream.waitFor('the live reply', (e) => e.event === 'chat');
    expect(chats(stream.events).map((e) => String(e.data.text))).toEqual([expect.stringContaining('only this')]);
    const reset = await future.waitFor('reset', (e) => e.event === 'reset');
    expect(String(reset.data.reason)).toMatch(
      /event 999999 is newer than any this host has; reload the history from \/v1\/conversations\/fresh\/events\?after=0/,
    );
    expect((await garbage.waitFor('reset', (e) => e.event === 'reset')).data.reason).toMatch(/"abc" is not an event id/);
    // After the reset both go on live.
    await future.waitFor('live after reset', (e) => e.event === 'chat');
    stream.close();
    future.close();
    garbage.close();
    expect(await host.stop()).toBe(0);
  });

  it('disconnects a client that stops reading, with the reason, and it resumes with Last-Event-ID', async () => {
    const host = await startHost({ PINCER_SSE_MAX_BUFFERED_BYTES: '100000' });
    const reader = host.stream('slow');
    const stuck = host.stream('slow', { paused: true });
    // Answers of 800 KB each while the stuck client reads nothing, until they are more than the socket buffers hold
    // (how much that is depends on the kernel's buffer tuning: it is sent in rounds until the host gives up, at most 48).
    const text = 'x'.repeat(800_000);
    let sent = 0;
    let checked = 0;
    while (!host.stderr().includes('bytes behind; disconnecting it')) {
      expect(sent, 'the host never gave up on the stuck client').toBeLessThan(48);
      for (let i = 0; i < 6; i++, sent++) expect((await host.request('POST', '/v1/conversations/slow/messages', { text: `${sent} ${text}` })).status).toBe(202);
      const last = `${sent - 1} xxx`;
      await waitFor(
        `message ${sent - 1} answered`,
        () =>
          chats(reader.events)
            .slice(checked)
            .some((e) => (checked++, String(e.data.text).includes(last))),
        { timeoutMs: 90_000, intervalMs: 50 },
      );
      // the host's log line may trail the reader's answer by a moment
      for (let wait = 0; wait < 20 && !host.stderr().includes('bytes behind; disconnecting it'); wait++) await new Promise((r) => setTimeout(r, 100));
    }
    stuck.resume();
    const bye = await stuck.waitFor('the disconnect event', (e) => e.event === 'disconnect', 30_000);
    expect(String(bye.data.reason)).toMatch(/client too slow: more than 100000 bytes unread; reconnect with Last-Event-ID to resume/);
    await waitFor('the stuck stream ended', () => stuck.ended());
    const seen = chats(stuck.events);
    const resumed = host.stream('slow', { lastEventId: seen.at(-1)?.id ?? '0' });
    const all = chats(reader.events).map((e) => e.id);
    await waitFor('the rest replayed', () => chats(resumed.events).length >= all.length - seen.length, { timeoutMs: 30_000 });
    expect([...seen, ...chats(resumed.events)].map((e) => e.id)).toEqual(all);
    reader.close();
    resumed.close();
    expect(await host.stop()).toBe(0);
  }, 180_000);
});
