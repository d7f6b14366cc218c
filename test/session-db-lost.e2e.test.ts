import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { overwriteMessagesPage } from '../bench/fault-db.js';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { isAlive } from './support/processes.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * A session's `session.db` deleted, replaced or damaged under a running host (and on a host restart): the host notices
 * at its next wake, keeps what was there aside, sets up a new database, gives the agent every accepted message not
 * answered yet, and tells the chat; a link at the path quarantines the session instead. Nothing accepted is lost, and
 * the other sessions go on.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

interface Event {
  type: string;
  text?: string;
}

async function send(host: HostHandle, conversation: string, text: string): Promise<{ sessionId: string; id: string }> {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text });
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string };
}

async function events(host: HostHandle, conversation: string): Promise<Event[]> {
  return (await host.request('GET', `/v1/conversations/${conversation}/events?after=0`)).body.events as Event[];
}

/** The agent's answers (the mock echoes the prompt) that mention `marker`. */
async function answers(host: HostHandle, conversation: string, marker: string): Promise<number> {
  return (await events(host, conversation)).filter((e) => e.type === 'chat' && e.text?.includes(marker)).length;
}

function answered(host: HostHandle, conversation: string, marker: string): Promise<number> {
  return waitFor(`"${marker}" answered`, async () => answers(host, conversation, marker), { timeoutMs: 30_000, intervalMs: 50 });
}

function notice(host: HostHandle, conversation: string, pattern: RegExp): Promise<Event> {
  return waitFor(`a notice ${pattern}`, async () => (await events(host, conversation)).find((e) => e.type === 'notice' && pattern.test(e.text ?? '')), {
    timeoutMs: 30_000,
    intervalMs: 50,
  });
}

const dbOf = (host: HostHandle, sessionId: string) => path.join(host.sessionDir(sessionId), 'session.db');

/** The status of a message in the session's database as it is at its path now. */
function statusOf(file: string, id: string): string | undefined {
  const db = openSessionDb(file);
  try {
    return (db.prepare('SELECT status FROM messages_in WHERE id = ?').get(id) as { status: string } | undefined)?.status;
  } finally {
    db.close();
  }
}

describe('session.db deleted under a running host', () => {
  it('while idle: a new database, a notice, and the next message is answered from it', async () => {
    const host = await startHost();
    const first = await send(host, 'idle', 'first');
    await answered(host, 'idle', 'first');
    const file = dbOf(host, first.sessionId);
    fs.rmSync(file);

    const told = await notice(host, 'idle', /session database was deleted/);
    expect(told.text).toMatch(/A new one was set up: the agent starts afresh/);
    const second = await send(host, 'idle', 'second');
    expect(await answered(host, 'idle', 'second')).toBe(1);
    expect(statusOf(file, second.id)).toBe('completed'); // the file at the path is the one in use
    expect(host.stderr()).toMatch(/session\.db was deleted; stopping its runner and setting up a new database/);
    // the new database's usage rows start again at id 1, below the old one's: they are counted all the same
    const turns = async (): Promise<number> => Number(((await host.request('GET', '/v1/usage')).body.total as { turns: number }).turns);
    expect(await waitFor('both turns counted', async () => ((await turns()) >= 2 ? turns() : undefined), { timeoutMs: 20_000, intervalMs: 100 })).toBe(2);
    expect(await host.stop()).toBe(0);
  });

  it('with its whole session folder: the folder is made again and the next message is answered', async () => {
    const host = await startHost();
    const first = await send(host, 'gone', 'first');
    await answered(host, 'gone', 'first');
    fs.rmSync(host.sessionDir(first.sessionId), { recursive: true });

    await notice(host, 'gone', /session database was deleted\. A new one was set up/);
    await send(host, 'gone', 'second');
    expect(await answered(host, 'gone', 'second')).toBe(1);
    expect(fs.existsSync(dbOf(host, first.sessionId))).toBe(true);
    expect(await host.stop()).toBe(0);
  });

  it('while a message is in work: it and one accepted right after are both answered, once', async () => {
    const host = await startHost({ MOCK_DELAY_MS: '1500' });
    const slow = await send(host, 'busy', 'slow one');
    const file = dbOf(host, slow.sessionId);
    await waitFor('the message in work', () => statusOf(file, slow.id) === 'processing', { timeoutMs: 20_000, intervalMs: 20 });
    fs.rmSync(file);
    await send(host, 'busy', 'right after');

    await notice(host, 'busy', /session database was deleted.*not answered yet were given to it again/);
    expect(await answered(host, 'busy', 'slow one')).toBe(1);
    expect(await answered(host, 'busy', 'right after')).toBe(1);
    expect(await host.stop()).toBe(0);
  }, 60_000);
});

describe('session.db replaced under a running host', () => {
  it('by another SQLite file: kept aside untouched, never read, and the session goes on afresh', async () => {
    const host = await startHost();
    const first = await send(host, 'swap', 'first');
    await answered(host, 'swap', 'first');
    const file = dbOf(host, first.sessionId);
    // Another Pincer database with a reply nobody wrote, waiting for delivery.
    const other = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-other-')), 'session.db');
    const forged = openSessionDb(other, { create: true });
    insertOutbound(forged, {
      kind: 'chat',
      content: { text: 'forged reply' },
      routing: { channelType: 'http', platformId: 'swap', threadId: null, inReplyTo: null },
    });
    forged.close();
    fs.renameSync(other, file);

    const told = await notice(host, 'swap', /session database was replaced by another file \(kept as session\.db\.replaced-/);
    const kept = /kept as (session\.db\.replaced-\S+) in the session folder/.exec(told.text ?? '')![1]!;
    await send(host, 'swap', 'second');
    expect(await answered(host, 'swap', 'second')).toBe(1);
    expect(await answers(host, 'swap', 'forged reply')).toBe(0);
    const aside = new Database(path.join(host.sessionDir(first.sessionId), kept), { readonly: true });
    expect(aside.prepare('SELECT delivered_at FROM messages_out').all()).toEqual([{ delivered_at: null }]);
    aside.close();
    expect(await host.stop()).toBe(0);
  });

  it('by a link to another session’s database: quarantined with a notice, the other session untouched', async () => {
    const host = await startHost();
    const a = await send(host, 'a', 'from a');
    const b = await send(host, 'b', 'from b');
    await answered(host, 'a', 'from a');
    await answered(host, 'b', 'from b');
    const aFile = dbOf(host, a.sessionId);
    // swapped in at once (a link made beside it, renamed over it), as an agent's shell would
    fs.symlinkSync(dbOf(host, b.sessionId), `${aFile}.link`);
    fs.renameSync(`${aFile}.link`, aFile);

    const told = await notice(host, 'a', /session is set aside and gets no answers \(session\.db is now a symbolic link\)/);
    expect(told.text).toMatch(/An administrator can move its folder aside/);
    const refused = await host.request('POST', '/v1/conversations/a/messages', { text: 'second from a' });
    expect(refused.status).toBe(503);
    await send(host, 'b', 'second from b');
    expect(await answered(host, 'b', 'second from b')).toBe(1);
    const bDb = openSessionDb(dbOf(host, b.sessionId));
    expect(bDb.prepare(`SELECT count(*) AS n FROM messages_in WHERE platform_id = 'a'`).get()).toEqual({ n: 0 });
    bDb.close();
    expect(fs.lstatSync(aFile).isSymbolicLink()).toBe(true); // left as found, for the administrator
    expect(await host.stop()).toBe(0);
  });
});

describe('session.db damaged under a running host', () => {
  it('a page overwritten: kept aside, a new database, and the session and the others go on', async () => {
    const host = await startHost();
    const first = await send(host, 'hurt', 'first');
    await send(host, 'fine', 'hello');
    await answered(host, 'hurt', 'first');
    await answered(host, 'fine', 'hello');
    const file = dbOf(host, first.sessionId);
    overwriteMessagesPage(file);

    await notice(host, 'hurt', /session database is damaged \(.+\) \(kept as session\.db\.damaged-/);
    await send(host, 'hurt', 'second');
    expect(await answered(host, 'hurt', 'second')).toBe(1);
    await send(host, 'fine', 'still here');
    expect(await answered(host, 'fine', 'still here')).toBe(1);
    expect(await host.stop()).toBe(0);
  }, 60_000);
});

describe('a host restarted after session.db was deleted', () => {
  it('starts, sets the session up afresh, and answers the message it had accepted before it died', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-lost-'));
    const first = await startHost({ MOCK_DELAY_MS: '600000' }, home);
    const kept = await send(first, 'restart', 'accepted before the crash');
    const other = await send(first, 'other', 'other session');
    const file = dbOf(first, kept.sessionId);
    await waitFor('the message in work', () => statusOf(file, kept.id) === 'processing', { timeoutMs: 20_000, intervalMs: 20 });
    first.child.kill('SIGKILL');
    await first.exited;
    for (const pid of first.runnerPids()) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    await waitFor('its runners gone', () => first.runnerPids().every((pid) => !isAlive(pid)));
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${file}${suffix}`, { force: true });

    const host = await startHost({}, home);
    await notice(host, 'restart', /session database is missing\. A new one was set up.*1 message\(s\) not answered yet were given to it again/);
    expect(await answered(host, 'restart', 'accepted before the crash')).toBe(1);
    expect(await answered(host, 'other', 'other session')).toBe(1);
    await send(host, 'restart', 'after the restart');
    expect(await answered(host, 'restart', 'after the restart')).toBe(1);
    expect(statusOf(file, kept.id)).toBe('completed');
    expect(other.sessionId).not.toBe(kept.sessionId);
    expect(await host.stop()).toBe(0);
  }, 60_000);
});
