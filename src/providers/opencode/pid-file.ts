import fs from 'node:fs';
import path from 'node:path';

/**
 * The OpenCode server runs in its own process group, so a runner killed with SIGKILL leaves it behind. Its pid is
 * recorded in the session's OpenCode state dir, and the next runner of the session stops a leftover server before
 * starting its own.
 */
export function reapStaleServer(stateDir: string, warn: (message: string) => void): string {
  const file = path.join(stateDir, 'pincer-server.pid');
  let pid: number;
  try {
    pid = Number(fs.readFileSync(file, 'utf8').trim());
  } catch {
    // no pid file: nothing left from an earlier run
    return file;
  }
  if (Number.isInteger(pid) && pid > 1 && isOpenCodeServer(pid)) {
    warn(`stopping a leftover opencode server (pid ${pid}) from an earlier runner`);
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  fs.rmSync(file, { force: true });
  return file;
}

export function recordServer(file: string, pid: number): void {
  fs.writeFileSync(file, `${pid}\n`);
}

function isOpenCodeServer(pid: number): boolean {
  try {
    const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return command.includes('opencode') && command.includes('serve');
  } catch {
    // no such process: not a leftover server
    return false;
  }
}
