import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A small tmpfs for disk-full tests: mounting needs root (and a kernel that lets this container mount). `tmpfsSkip`
 * says why it cannot be used here, or is undefined when it can. `fill` writes a file until the disk is full.
 */
export const tmpfsSkip: string | undefined = (() => {
  if (process.getuid?.() !== 0) return 'needs root to mount a small tmpfs';
  const probe = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-tmpfs-probe-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe]).status === 0;
  if (mounted) spawnSync('umount', [probe]);
  fs.rmdirSync(probe);
  return mounted ? undefined : 'mount -t tmpfs is not allowed in this container';
})();

export interface Tmpfs {
  dir: string;
  /** write a file until the disk is full; returns its path (remove it to free the space). */
  fill(): string;
  unmount(): void;
}

export function mountTmpfs(sizeMb: number): Tmpfs {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-tmpfs-'));
  const result = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`mount tmpfs failed: ${result.stderr}`);
  return {
    dir,
    fill() {
      const file = path.join(dir, 'filler');
      const fd = fs.openSync(file, 'w');
      const chunk = Buffer.alloc(64 * 1024);
      try {
        for (;;) fs.writeSync(fd, chunk);
      } catch {
        // ENOSPC: full; then the last bytes
        try {
          for (;;) fs.writeSync(fd, Buffer.alloc(512));
        } catch {
          // full
        }
      } finally {
        fs.closeSync(fd);
      }
      return file;
    },
    unmount() {
      spawnSync('umount', ['-l', dir]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** CPU time (user + system) a process has used, in ms, from /proc (Linux). */
export function cpuTimeMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
