import type { QueueEntry } from 'chat';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openCentralDb } from '../src/host/central-db/store.js';
import { SqliteStateAdapter } from '../src/host/platforms/state.js';
import { waitFor } from './support/wait.js';

/**
 * The Chat SDK's state-adapter contract (the `StateAdapter` interface's documented semantics, case by case as the
 * SDK's own adapters are tested) against our SQLite state on a real central DB file; plus what a persistent store
 * adds: a claim survives a reopened database, so a redelivered event after a restart is still a duplicate.
 */
let dir: string;
let file: string;
const dbs: ReturnType<typeof openCentralDb>[] = [];
let state: SqliteStateAdapter;

function open(): SqliteStateAdapter {
  const db = openCentralDb(file);
  dbs.push(db);
  return new SqliteStateAdapter(db);
}

/** A lapse of `ms`, observed by the wall clock (TTLs are wall-clock), waited for rather than slept. */
async function lapse(ms: number): Promise<void> {
  const until = Date.now() + ms;
  await waitFor(`${ms} ms to pass`, () => Date.now() > until, { intervalMs: 5 });
}

const entry = (id: string): QueueEntry => ({ message: { id } as never, enqueuedAt: Date.now(), expiresAt: Date.now() + 90_000 });

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chat-state-'));
  file = path.join(dir, 'pincer.db');
  state = open();
  await state.connect();
});

afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('SQLite chat state: subscriptions', () => {
  it('subscribes, reports and unsubscribes a thread', async () => {
    await state.subscribe('slack:C123:1234.5678');
    await state.subscribe('slack:C123:1234.5678');
    expect(await state.isSubscribed('slack:C123:1234.5678')).toBe(true);
    expect(await state.isSubscribed('slack:C123:other')).toBe(false);
    await state.unsubscribe('slack:C123:1234.5678');
    expect(await state.isSubscribed('slack:C123:1234.5678')).toBe(false);
  });
});

describe('SQLite chat state: locks', () => {
  it('gives a lock once, and again only after release', async () => {
    const lock = await state.acquireLock('t1', 5000);
    expect(lock).toMatchObject({ threadId: 't1' });
    expect(lock!.token).toBeTruthy();
    expect(await state.acquireLock('t1', 5000)).toBeNull();
    await state.releaseLock(lock!);
    expect(await state.acquireLock('t1', 5000)).not.toBeNull();
  });

  it('does not release a lock for a wrong token', async () => {
    await state.acquireLock('t1', 5000);
    await state.releaseLock({ threadId: 't1', token: 'fake', expiresAt: Date.now() + 5000 });
    expect(await state.acquireLock('t1', 5000)).toBeNull();
  });

  it('lets a lock lapse at its TTL; an expired lock cannot be extended', async () => {
    const first = await state.acquireLock('t1', 10);
    await lapse(20);
    expect(await state.extendLock(first!, 5000)).toBe(false);
    const second = await state.acquireLock('t1', 5000);
    expect(second).not.toBeNull();
    expect(second!.token).not.toBe(first!.token);
    // The old holder's release is a no-op now.
    await state.releaseLock(first!);
    expect(await state.acquireLock('t1', 5000)).toBeNull();
  });

  it('extends a held lock, and force-release frees it whatever the token', async () => {
    const lock = await state.acquireLock('t1', 100);
    expect(await state.extendLock(lock!, 5000)).toBe(true);
    expect(await state.acquireLock('t1', 5000)).toBeNull();
    await state.forceReleaseLock('t1');
    expect(await state.extendLock(lock!, 5000)).toBe(false);
    const next = await state.acquireLock('t1', 5000);
    expect(next!.token).not.toBe(lock!.token);
    await expect(state.forceReleaseLock('none')).resolves.toBeUndefined();
  });
});

describe('SQLite chat state: cache', () => {
  it('gets, sets, overwrites, deletes, with null for a missing key', async () => {
    expect(await state.get('k')).toBeNull();
    await state.set('k', { a: 1 });
    expect(await state.get('k')).toEqual({ a: 1 });
    await state.set('k', 'two');
    expect(await state.get('k')).toBe('two');
    await state.delete('k');
    expect(await state.get('k')).toBeNull();
  });

  it('expires a value at its TTL', async () => {
    await state.set('k', 'v', 10);
    await lapse(20);
    expect(await state.get('k')).toBeNull();
  });

  it('setIfNotExists sets once, keeps the first value, and sets again after the TTL', async () => {
    expect(await state.setIfNotExists('dedupe:x', 'first', 30)).toBe(true);
    expect(await state.setIfNotExists('dedupe:x', 'second')).toBe(false);
    expect(await state.get('dedupe:x')).toBe('first');
    await lapse(40);
    expect(await state.get('dedupe:x')).toBeNull();
    expect(await state.setIfNotExists('dedupe:x', 'third')).toBe(true);
    expect(await state.get('dedupe:x')).toBe('third');
  });

  it('a claim survives a reopened database: a redelivery after a restart is still a duplicate', async () => {
    expect(await state.setIfNotExists('dedupe:telegram:1:2', true, 60_000)).toBe(true);
    await state.disconnect();
    const reopened = open();
    await reopened.connect();
    expect(await reopened.setIfNotExists('dedupe:telegram:1:2', true, 60_000)).toBe(false);
  });
});

describe('SQLite chat state: lists', () => {
  it('appends in order, isolated by key, [] for a missing list', async () => {
    await state.appendToList('a', { id: 1 });
    await state.appendToList('a', { id: 2 });
    await state.appendToList('b', 'b');
    expect(await state.getList('a')).toEqual([{ id: 1 }, { id: 2 }]);
    expect(await state.getList('b')).toEqual(['b']);
    expect(await state.getList('none')).toEqual([]);
  });

  it('trims to maxLength keeping the newest', async () => {
    for (let i = 1; i <= 5; i++) await state.appendToList('a', { id: i }, { maxLength: 3 });
    expect(await state.getList('a')).toEqual([{ id: 3 }, { id: 4 }, { id: 5 }]);
  });

  it('expires at its TTL, an append refreshes the TTL, and an expired list starts fresh', async () => {
    await state.appendToList('a', { id: 1 }, { ttlMs: 10 });
    await lapse(20);
    expect(await state.getList('a')).toEqual([]);
    await state.appendToList('a', { id: 2 }, { ttlMs: 60 });
    await state.appendToList('a', { id: 3 }, { ttlMs: 5000 });
    await lapse(80);
    expect(await state.getList('a')).toEqual([{ id: 2 }, { id: 3 }]);
  });
});

describe('SQLite chat state: queues', () => {
  it('enqueues and dequeues FIFO with the depth, null when empty', async () => {
    expect(await state.dequeue('t')).toBeNull();
    expect(await state.queueDepth('t')).toBe(0);
    const first = entry('m1');
    expect(await state.enqueue('t', first, 10)).toBe(1);
    await state.enqueue('t', entry('m2'), 10);
    expect(await state.enqueue('t', entry('m3'), 10)).toBe(3);
    expect(await state.dequeue('t')).toEqual(first);
    expect((await state.dequeue('t'))?.message).toEqual({ id: 'm2' });
    expect((await state.dequeue('t'))?.message).toEqual({ id: 'm3' });
    expect(await state.dequeue('t')).toBeNull();
    expect(await state.queueDepth('t')).toBe(0);
  });

  it('trims to maxSize keeping the newest (1: debounce keeps only the last)', async () => {
    for (let i = 1; i <= 5; i++) await state.enqueue('t', entry(`m${i}`), 3);
    expect(await state.queueDepth('t')).toBe(3);
    expect((await state.dequeue('t'))?.message).toEqual({ id: 'm3' });
    for (let i = 1; i <= 3; i++) await state.enqueue('d', entry(`d${i}`), 1);
    expect(await state.queueDepth('d')).toBe(1);
    expect((await state.dequeue('d'))?.message).toEqual({ id: 'd3' });
  });

  it('keeps queues isolated by thread', async () => {
    await state.enqueue('a', entry('a1'), 10);
    await state.enqueue('b', entry('b1'), 10);
    expect((await state.dequeue('b'))?.message).toEqual({ id: 'b1' });
    expect((await state.dequeue('a'))?.message).toEqual({ id: 'a1' });
  });
});

describe('SQLite chat state: connection', () => {
  it('refuses every call before connect with a clear error', async () => {
    const fresh = open();
    await expect(fresh.subscribe('t')).rejects.toThrow('not connected: call connect() first');
    await expect(fresh.setIfNotExists('k', 1)).rejects.toThrow('not connected');
  });
});
