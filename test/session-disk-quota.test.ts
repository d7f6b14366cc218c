import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { measureFolder, overQuotaNotice, SessionDiskQuota, sessionDiskLimits } from '../src/host/session/disk-quota.js';
import { createLogger } from '../src/shared/log.js';
import { waitFor } from './support/wait.js';

/** The session folder's limit (src/host/session/disk-quota.ts): the walk, and when a runner may start. */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-quota-'));
  dirs.push(dir);
  return dir;
}
const MiB = 1024 ** 2;
const BIG = { bytes: 1024 ** 4, files: 1_000_000 };

describe('measureFolder', () => {
  it('counts allocated bytes and entries, and never follows a link', async () => {
    const dir = tempDir();
    const outside = tempDir();
    fs.writeFileSync(path.join(outside, 'huge'), Buffer.alloc(4 * MiB, 1));
    fs.mkdirSync(path.join(dir, 'a/b'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'a/b/one'), Buffer.alloc(MiB, 1));
    fs.symlinkSync(outside, path.join(dir, 'link-to-folder'));
    fs.symlinkSync(path.join(outside, 'huge'), path.join(dir, 'a/link-to-file'));
    // sparse: 1 GiB long, nothing written
    fs.closeSync(fs.openSync(path.join(dir, 'sparse'), 'w'));
    fs.truncateSync(path.join(dir, 'sparse'), 1024 ** 3);
    const usage = await measureFolder(dir, BIG);
    expect(usage.over).toBe(false);
    expect(usage.files).toBe(7); // dir, a, a/b, a/b/one, two links, sparse
    expect(usage.bytes).toBeGreaterThanOrEqual(MiB);
    expect(usage.bytes).toBeLessThan(2 * MiB);
  });

  it('stops as soon as a limit is passed', async () => {
    const dir = tempDir();
    for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(dir, `f${i}`), '');
    const byFiles = await measureFolder(dir, { bytes: BIG.bytes, files: 100 });
    expect(byFiles).toMatchObject({ over: true });
    expect(byFiles.files).toBeLessThanOrEqual(101 + 64); // one batch past the limit at most
    fs.writeFileSync(path.join(dir, 'big'), Buffer.alloc(2 * MiB, 1));
    expect(await measureFolder(dir, { bytes: MiB, files: BIG.files })).toMatchObject({ over: true });
  });
});

describe('SessionDiskQuota', () => {
  it('measures before a start, refuses while over, and lets a start go once room was made', async () => {
    const dir = tempDir();
    const quota = new SessionDiskQuota(dir, { bytes: MiB, files: 1000 }, createLogger('test'));
    let woken = 0;
    const wake = (): void => void woken++;
    expect(quota.beforeStart(wake)).toBe('measuring');
    await waitFor('the measure', () => woken > 0 || undefined);
    expect(quota.beforeStart(wake)).toBe('ok');
    expect(quota.beforeStart(wake)).toBe('ok'); // no runner ran since: no new walk
    fs.writeFileSync(path.join(dir, 'big'), Buffer.alloc(2 * MiB, 1));
    quota.unwatch(); // a runner ran and ended
    expect(quota.beforeStart(wake)).toBe('measuring');
    await waitFor('the measure', () => woken > 1 || undefined);
    expect(quota.beforeStart(wake)).toBe('over');
    expect(overQuotaNotice(quota.lastUsage()!, quota.limits)).toContain('more than 1 MiB, its limit (PINCER_SESSION_DISK)');
    // while over, every try measures again: the administrator may have made room
    expect(quota.beforeStart(wake)).toBe('measuring');
    fs.rmSync(path.join(dir, 'big'));
    await waitFor('the measure', () => woken > 2 || undefined);
    expect(quota.beforeStart(wake)).toBe('ok');
  });

  it('finds a folder that grows past its limit while its runner runs', async () => {
    const dir = tempDir();
    const quota = new SessionDiskQuota(dir, { bytes: 4 * MiB, files: 1000 }, createLogger('test'));
    quota.beforeStart(() => undefined);
    await waitFor('the measure', () => quota.lastUsage());
    const over: number[] = [];
    quota.watch((usage) => over.push(usage.bytes));
    for (let i = 0; i < 8; i++) fs.writeFileSync(path.join(dir, `f${i}`), Buffer.alloc(MiB, 1));
    await waitFor('the folder found over', () => over.length > 0 || undefined, { timeoutMs: 20_000 });
    expect(over[0]).toBeGreaterThan(4 * MiB);
    quota.unwatch();
  });

  it('reads its settings', () => {
    expect(sessionDiskLimits({})).toEqual({ bytes: 4 * 1024 ** 3, files: 250_000 });
    expect(sessionDiskLimits({ PINCER_SESSION_DISK: '16m', PINCER_SESSION_FILES: '10' })).toEqual({ bytes: 16 * MiB, files: 10 });
    expect(overQuotaNotice({ bytes: 0, files: 11, over: true }, { bytes: MiB, files: 10 })).toContain(
      'more than 10 files and folders, its limit (PINCER_SESSION_FILES)',
    );
  });
});
