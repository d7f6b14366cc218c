import fs from 'node:fs';

/**
 * The kernel's inotify limits and how many instances this user's processes hold (each runner's waker takes one; past
 * the limit a runner polls instead: docs/reliability.md "Kills, crashes and hangs"). Read from /proc; undefined
 * fields where it cannot be read (not Linux, a restricted /proc).
 */
export interface InotifyLimits {
  maxUserInstances?: number;
  maxUserWatches?: number;
  /** inotify instances open in the processes of this user that /proc lets us read. */
  inUse?: number;
}

export function inotifyLimits(proc = '/proc'): InotifyLimits {
  const read = (name: string): number | undefined => {
    try {
      const value = Number(fs.readFileSync(`${proc}/sys/fs/inotify/${name}`, 'utf8').trim());
      return Number.isFinite(value) ? value : undefined;
    } catch {
      return undefined; // not Linux, or no such file: nothing to show
    }
  };
  return { maxUserInstances: read('max_user_instances'), maxUserWatches: read('max_user_watches'), inUse: instancesInUse(proc) };
}

function instancesInUse(proc: string): number | undefined {
  const uid = process.getuid?.();
  let pids: string[];
  try {
    pids = fs.readdirSync(proc).filter((entry) => /^\d+$/.test(entry));
  } catch {
    return undefined; // no /proc: nothing counted
  }
  let count = 0;
  for (const pid of pids) {
    try {
      if (uid !== undefined && fs.statSync(`${proc}/${pid}`).uid !== uid) continue;
      for (const fd of fs.readdirSync(`${proc}/${pid}/fd`)) {
        if (fs.readlinkSync(`${proc}/${pid}/fd/${fd}`) === 'anon_inode:inotify') count += 1;
      }
    } catch {
      // it ended while we looked, or its file descriptors are not ours to read
    }
  }
  return count;
}

/** One line for `pincer doctor`. */
export function describeInotify(limits: InotifyLimits): string {
  if (limits.maxUserInstances === undefined) return 'inotify: limits not readable here (runners poll where they cannot watch)';
  const inUse = limits.inUse !== undefined ? `${limits.inUse} of ` : '';
  return (
    `inotify: ${inUse}${limits.maxUserInstances} instances per user in use (fs.inotify.max_user_instances), ` +
    `${limits.maxUserWatches ?? '?'} watches (max_user_watches); each runner takes one instance, and one without polls instead`
  );
}
