import fs from 'node:fs';

/**
 * The processes that belong to a session folder: their working directory is inside it, or their command line or
 * environment names it (the SDK CLIs, the OpenCode server and the MCP servers they start all do). Used after a test
 * to prove that stopping or aborting left no child process behind.
 */
export interface SessionProcess {
  pid: number;
  command: string;
}

/** A process's environment as `/proc` shows it (`NAME=value\0…`); empty once it is gone or not readable. */
export function environOf(pid: number): string {
  return safe(() => fs.readFileSync(`/proc/${pid}/environ`, 'latin1')) ?? '';
}

export function processesUsing(root: string): SessionProcess[] {
  const found: SessionProcess[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      if (command === '') continue; // zombie or kernel thread
      const cwd = safe(() => fs.readlinkSync(`/proc/${pid}/cwd`));
      const environ = environOf(pid);
      if (cwd?.startsWith(root) || command.includes(root) || environ.includes(root)) found.push({ pid, command });
    } catch {
      // the process exited while we looked
    }
  }
  return found;
}

function safe<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/**
 * For afterEach: wait a little for the session's processes to exit, then SIGKILL whatever is left (so a failed test
 * never leaves a server running on the machine) and return what had to be killed — the test should assert it is empty.
 */
export async function reapSessionProcesses(root: string, graceMs = 10_000): Promise<SessionProcess[]> {
  const deadline = Date.now() + graceMs;
  let left = processesUsing(root);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    left = processesUsing(root);
  }
  for (const { pid } of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // exited meanwhile
    }
  }
  return left;
}

/** True while a process with this pid exists. */
export function isAlive(pid: number | null): boolean {
  if (pid === null) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every descendant of `pid` (children, their children, …; `pid` excluded), from /proc/<pid>/task/<tid>/children. */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  const visit = (parent: number): void => {
    let tasks: string[];
    try {
      tasks = fs.readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const tid of tasks) {
      let children = '';
      try {
        children = fs.readFileSync(`/proc/${parent}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of children.trim().split(/\s+/).filter(Boolean).map(Number)) {
        if (!out.includes(child)) {
          out.push(child);
          visit(child);
        }
      }
    }
  };
  visit(pid);
  return out;
}

/**
 * A slow start on demand: wait for the first process of the session folder `root` whose command line matches, stop it
 * (SIGSTOP) the moment it appears, and let it go on (SIGCONT) `holdMs` later — as a process starts on a machine so
 * busy it gets no CPU for that long. Polled every 2 ms, so a Node process is caught long before it has loaded its
 * code. Resolves with its pid once it runs again.
 */
export async function holdStart(root: string, command: RegExp, holdMs: number, timeoutMs = 45_000): Promise<{ pid: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pid = findProcess(root, command);
    if (pid !== undefined) {
      process.kill(pid, 'SIGSTOP');
      try {
        await new Promise((resolve) => setTimeout(resolve, holdMs));
      } finally {
        if (isAlive(pid)) process.kill(pid, 'SIGCONT');
      }
      return { pid };
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for a process matching ${command} in ${root}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Like `processesUsing`, but cheap enough to poll every few milliseconds: the command line first, the rest only on a match. */
function findProcess(root: string, command: RegExp): number | undefined {
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const line = safe(() => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim());
    if (!line || !command.test(line)) continue;
    const environ = environOf(pid);
    if (line.includes(root) || environ.includes(root)) return pid;
  }
  return undefined;
}
