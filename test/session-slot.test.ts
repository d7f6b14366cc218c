import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { insertInbound } from '../src/db/messages.js';
import { openSessionDbChecked, SessionSlot } from '../src/host/session/slot.js';
import { createLogger } from '../src/shared/log.js';
import { cleanupSessions, createTestSession } from './support/session.js';

const log = createLogger('test', () => undefined);
const slots: SessionSlot[] = [];

afterEach(async () => {
  for (const slot of slots.splice(0)) await slot.close();
  cleanupSessions();
});

function slotOf(durable: boolean): { slot: SessionSlot; dbFile: string } {
  const session = createTestSession();
  session.db.close();
  const folder = session.paths.root;
  const slot = new SessionSlot({ id: 'slot-test', folder }, log, openSessionDbChecked(folder), durable);
  slots.push(slot);
  return { slot, dbFile: session.paths.db };
}

describe('SessionSlot durability', () => {
  it('a served session commits with synchronous=FULL and wakes readers again once a write is acknowledged', () => {
    const { slot, dbFile } = slotOf(true);
    expect(slot.db.pragma('synchronous', { simple: true })).toBe(2); // FULL
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(dbFile, past, past);
    insertInbound(slot.db, { kind: 'chat', content: { text: 'hi', sender: 'alice' } });
    slot.committed();
    expect(fs.lstatSync(dbFile).mtimeMs).toBeGreaterThan(past.getTime() + 30_000);
  });

  it("a session the host runs itself keeps synchronous=NORMAL and leaves the file's times alone", () => {
    const { slot, dbFile } = slotOf(false);
    expect(slot.db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(dbFile, past, past);
    slot.committed();
    expect(Math.abs(fs.lstatSync(dbFile).mtimeMs - past.getTime())).toBeLessThan(1000);
  });

  it('touches a link in place of session.db without following it', () => {
    const { slot, dbFile } = slotOf(true);
    const target = `${dbFile}.elsewhere`;
    fs.writeFileSync(target, '');
    const past = new Date(Date.now() - 60_000);
    fs.utimesSync(target, past, past);
    fs.renameSync(dbFile, `${dbFile}.moved`);
    fs.symlinkSync(target, dbFile);
    slot.committed();
    expect(Math.abs(fs.statSync(target).mtimeMs - past.getTime())).toBeLessThan(1000);
  });
});
