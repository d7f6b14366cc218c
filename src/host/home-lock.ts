import fs from 'node:fs';
import path from 'node:path';
import { HostError } from './errors.js';

/**
 * One host per home: two hosts on the same sessions would start two runners per session. The lock is a file holding
 * the host's pid, created exclusively; a lock whose pid is dead (a host killed with SIGKILL) is taken over.
 */
export class HomeLock {
  private constructor(private readonly file: string) {}

  static acquire(home: string): HomeLock {
    const file = path.join(home, 'host.lock');
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        fs.writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
        return new HomeLock(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = Number(fs.readFileSync(file, 'utf8').trim());
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isProcessAlive(holder)) {
        throw new HostError('config', `another host (pid ${holder}) is using ${home}; stop it first or use another PINCER_HOME`);
      }
      fs.rmSync(file, { force: true }); // stale: its host is gone
    }
    throw new HostError('config', `could not lock ${file}`);
  }

  release(): void {
    try {
      if (Number(fs.readFileSync(this.file, 'utf8').trim()) === process.pid) fs.rmSync(this.file);
    } catch {
      // already gone
    }
  }
}

/** Whether a process with this pid exists (EPERM: it does, owned by someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
