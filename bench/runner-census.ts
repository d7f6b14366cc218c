import fs from 'node:fs';
import path from 'node:path';

/**
 * Which runner processes are alive, per session folder, read from /proc (not from anything a host or a runner says):
 * the fault suite samples it to prove a session never has two runners, and that none outlives its host. A runner is
 * a Node process whose command line ends in `runner`. A process runner names its session in PINCER_WORKSPACE; a
 * sandboxed one sees `/workspace`, so its session is the folder its bwrap binds there.
 */
export function liveRunners(home: string): Map<string, number[]> {
  const procs = new Map<number, { ppid: number; args: string[] }>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (args.length === 0) continue; // a zombie or a kernel thread
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      procs.set(Number(entry), { ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]), args });
    } catch {
      // it ended while we looked
    }
  }
  const root = path.resolve(home);
  const found = new Map<string, number[]>();
  for (const [pid, proc] of procs) {
    if (proc.args.at(-1) !== 'runner' || !/node/.test(path.basename(proc.args[0]!))) continue;
    const folder = workspaceOf(pid, procs);
    if (folder === undefined || !(folder === root || folder.startsWith(`${root}${path.sep}`))) continue;
    found.set(folder, [...(found.get(folder) ?? []), pid]);
  }
  return found;
}

function workspaceOf(pid: number, procs: Map<number, { ppid: number; args: string[] }>): string | undefined {
  let environ = '';
  try {
    environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return undefined;
  }
  const own = /(?:^|\0)PINCER_WORKSPACE=([^\0]*)/.exec(environ)?.[1];
  if (own !== undefined && own !== '/workspace') return path.resolve(own);
  // inside bwrap: bwrap (outside) → bwrap (the sandbox's init) → node; the outer one's arguments bind the session
  for (let up = procs.get(pid)?.ppid, depth = 0; up !== undefined && depth < 4; up = procs.get(up)?.ppid, depth++) {
    const args = procs.get(up)?.args ?? [];
    for (let i = 0; i + 2 < args.length; i++) if (args[i] === '--bind' && args[i + 2] === '/workspace') return args[i + 1];
  }
  return undefined;
}

/** Samples `liveRunners` every `intervalMs` and keeps the most runners any one session had at once. */
export function runnerCensus(home: string, intervalMs = 100): { most(): number; where(): string | undefined; sample(): number; stop(): void } {
  let most = 0;
  let where: string | undefined;
  const sample = (): number => {
    let now = 0;
    for (const [folder, pids] of liveRunners(home)) {
      now = Math.max(now, pids.length);
      if (pids.length > most) {
        most = pids.length;
        where = `${path.basename(folder)}: pids ${pids.join(', ')}`;
      }
    }
    return now;
  };
  const timer = setInterval(sample, intervalMs);
  return { most: () => most, where: () => where, sample, stop: () => clearInterval(timer) };
}
