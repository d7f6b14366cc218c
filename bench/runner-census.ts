import fs from 'node:fs';
import path from 'node:path';

/**
 * Which runner processes are alive, per session folder, read from /proc (not from anything a host or a runner says):
 * the fault suite samples it to prove a session never has two runners, and that none outlives its host. A runner is
 * a Node process whose command line ends in `runner`, in any mode (a container's processes are the kernel's too). A
 * process runner names its session in PINCER_WORKSPACE; a sandboxed one sees `/workspace`, and its session is the
 * folder mounted there (its mount table's root of `/workspace` is the end of that folder's path).
 */
export function liveRunners(home: string): Map<string, number[]> {
  const root = fs.realpathSync(path.resolve(home));
  const found = new Map<string, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (args.at(-1) !== 'runner' || !/node/.test(path.basename(args[0] ?? ''))) continue; // (a zombie has no args)
      if (isForkOf(pid, args)) continue;
      const folder = workspaceOf(pid, root);
      if (folder === undefined || !(folder === root || folder.startsWith(`${root}${path.sep}`))) continue;
      found.set(folder, [...(found.get(folder) ?? []), pid]);
    } catch {
      // it ended while we looked
    }
  }
  return found;
}

/**
 * Whether `pid` is a child its parent forked and that has not exec'd its own program yet: until then it shows its
 * parent's command line (a runner starting an MCP server, a session process starting its runner) and is not a second
 * one of them.
 */
function isForkOf(pid: number, args: string[]): boolean {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  try {
    return fs.readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\0').filter(Boolean).join('\0') === args.join('\0');
  } catch {
    return false;
  }
}

function workspaceOf(pid: number, home: string): string | undefined {
  const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
  const own = /(?:^|\0)PINCER_WORKSPACE=([^\0]*)/.exec(environ)?.[1];
  if (own !== undefined && own !== '/workspace') return fs.realpathSync(path.resolve(own));
  // mountinfo: "id parent major:minor root mountpoint …"; the root is the bound folder's path inside its filesystem
  const mount = fs
    .readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
    .split('\n')
    .map((line) => line.split(' '))
    .find((fields) => fields[4] === '/workspace');
  const bound = mount?.[3]?.replace(/\\(\d{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  if (bound === undefined) return undefined;
  // the home's session folders, or the home itself when it is one session's folder (the launcher tests)
  const sessions = path.join(home, 'sessions');
  let names: string[] = [];
  try {
    names = fs.readdirSync(sessions).map((name) => path.join(sessions, name));
  } catch {
    // no sessions/ folder
  }
  return [home, ...names].map((folder) => fs.realpathSync(folder)).find((folder) => folder.endsWith(bound));
}

/**
 * Which `pincer session-serve` processes are alive, per session folder (their last argument): two at once for one
 * session would be two writers of its database, which the launch epoch exists to prevent.
 */
export function liveServes(home: string): Map<string, number[]> {
  const root = fs.realpathSync(path.resolve(home));
  const found = new Map<string, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const at = args.indexOf('session-serve');
      if (at < 0 || !/node/.test(path.basename(args[0] ?? ''))) continue;
      const folder = path.resolve(args.at(-1)!);
      if (!folder.startsWith(`${root}${path.sep}`) || isForkOf(Number(entry), args)) continue;
      found.set(folder, [...(found.get(folder) ?? []), Number(entry)]);
    } catch {
      // it ended while we looked
    }
  }
  return found;
}

/** Samples `liveRunners` every `intervalMs` and keeps the most runners any one session had at once. */
export function runnerCensus(
  home: string,
  intervalMs = 100,
  live: (home: string) => Map<string, number[]> = liveRunners,
): { most(): number; where(): string | undefined; sample(): number; stop(): void } {
  let most = 0;
  let where: string | undefined;
  const sample = (): number => {
    let now = 0;
    for (const [folder, pids] of live(home)) {
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
