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

export function processesUsing(root: string): SessionProcess[] {
  const found: SessionProcess[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const command = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      if (command === '') continue; // zombie or kernel thread
      const cwd = safe(() => fs.readlinkSync(`/proc/${pid}/cwd`));
      const environ = safe(() => fs.readFileSync(`/proc/${pid}/environ`, 'utf8')) ?? '';
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
