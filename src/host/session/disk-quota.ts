import fs from 'node:fs';
import path from 'node:path';
import { parseSize } from '../../container/limits.js';
import { settingsSchema } from '../../shared/settings.js';
import { errorMessage, type Logger } from '../../shared/log.js';

/**
 * The limit on a session folder's total (docs/security.md "Resource limits"): the agent writes its session folder, a
 * folder of the host's disk bound into its sandbox, so without a limit it can fill the host's disk (or its inodes).
 * No runner mode gives a size-limited bind of a host folder without the administrator's help (a project quota, a
 * volume per session), so the host checks the folder itself, in every mode: before it starts a runner, and while one
 * runs whenever the disk the folder is on has grown by half of what the folder had left at the last measure (a
 * `statfs`, every half second). A folder over either limit has its runner killed, the chat told once, and its messages
 * refused until files are removed or the limit raised.
 */
export interface SessionDiskLimits {
  /** allocated bytes (what the files take on the disk: a sparse file counts what it holds). */
  bytes: number;
  /** files, folders and links, the folder itself included. */
  files: number;
}

/** The limits of these settings (the environment's values, else the defaults; the host checked them at start). */
export function sessionDiskLimits(env: NodeJS.ProcessEnv = {}): SessionDiskLimits {
  const e = settingsSchema(['PINCER_SESSION_DISK', 'PINCER_SESSION_FILES']).parse(env);
  return { bytes: parseSize(e.PINCER_SESSION_DISK), files: e.PINCER_SESSION_FILES };
}

export interface FolderUsage {
  bytes: number;
  files: number;
  /** the walk stopped as soon as a limit was passed: the folder holds at least this much. */
  over: boolean;
}

/** How many entries are looked at at once: the walk must not hold the host's descriptors or its event loop. */
const BATCH = 64;

/**
 * The folder's allocated size and entry count, not following links (a link counts itself, never what it points to).
 * Stops once past `stopAt`, so a folder of millions of files costs the host no more than the limit's worth of
 * `lstat`s. Entries that vanish on the way (the agent deletes while the host counts) are skipped.
 */
export async function measureFolder(dir: string, stopAt: SessionDiskLimits): Promise<FolderUsage> {
  const usage: FolderUsage = { bytes: 0, files: 0, over: false };
  const add = (stat: fs.Stats): void => {
    usage.bytes += stat.blocks * 512;
    usage.files += 1;
    if (usage.bytes > stopAt.bytes || usage.files > stopAt.files) usage.over = true;
  };
  add(await fs.promises.lstat(dir));
  const folders = [dir];
  while (folders.length > 0 && !usage.over) {
    const folder = folders.pop()!;
    let names: string[];
    try {
      names = await fs.promises.readdir(folder);
    } catch {
      continue; // gone, or not a folder any more (replaced by the agent): nothing to count there
    }
    for (let i = 0; i < names.length && !usage.over; i += BATCH) {
      const stats = await Promise.all(
        names.slice(i, i + BATCH).map(async (name) => {
          const file = path.join(folder, name);
          return fs.promises.lstat(file).then(
            (stat) => ({ file, stat }),
            () => undefined, // vanished between readdir and lstat
          );
        }),
      );
      for (const entry of stats) {
        if (!entry) continue;
        add(entry.stat);
        if (entry.stat.isDirectory()) folders.push(entry.file);
      }
    }
  }
  return usage;
}

/** How often a running session's disk is looked at (one statfs: cheap) and, at the most, how long between two walks. */
const LOOK_MS = 500;
const WALK_EVERY_MS = 5 * 60_000;

export type DiskVerdict = 'ok' | 'over' | 'measuring';

/** One session folder's limit: measures, watches while a runner runs, and says whether a runner may start. */
export class SessionDiskQuota {
  private usage: FolderUsage | undefined;
  private measuredAt = 0;
  /** the folder may have changed since the last measure (a runner ran): measure before the next start. */
  private stale = true;
  private measuring: Promise<FolderUsage | undefined> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** the disk's used bytes and inodes when the last walk began. */
  private diskAtWalk: { bytes: number; files: number } | undefined;
  private watching = false;
  /** the last measure's verdict has not been given by `beforeStart` yet. */
  private unread = false;

  constructor(
    private readonly folder: string,
    readonly limits: SessionDiskLimits,
    private readonly log: Logger,
  ) {}

  /**
   * Whether a runner may start now. `measuring`: a measure is under way, `wake` is called when it is done. The folder
   * is measured again when a runner ran since the last measure, and every time while it was over (the administrator
   * may have made room just now); each measure's verdict is given once. A measure that fails (the folder cannot be
   * read) lets the start go on: the runner's own start fails more clearly then.
   */
  beforeStart(wake: () => void): DiskVerdict {
    if (this.measuring) {
      void this.measuring.then(wake);
      return 'measuring';
    }
    if (this.unread && this.usage) {
      this.unread = false;
      return this.usage.over ? 'over' : 'ok';
    }
    if (this.stale || this.usage === undefined || this.usage.over) {
      void this.measure().then(wake);
      return 'measuring';
    }
    return 'ok';
  }

  /** What the last measure found (for the notice). */
  lastUsage(): FolderUsage | undefined {
    return this.usage;
  }

  /** A runner started: watch the disk while it runs; `onOver` once the folder is found past its limit. */
  watch(onOver: (usage: FolderUsage) => void): void {
    this.unwatch();
    this.diskAtWalk = diskUsed(this.folder);
    const look = (): void => {
      this.timer = undefined;
      const disk = diskUsed(this.folder);
      const last = this.usage;
      const since = this.diskAtWalk;
      const grown =
        last === undefined ||
        since === undefined ||
        disk === undefined ||
        Date.now() - this.measuredAt >= WALK_EVERY_MS ||
        disk.bytes - since.bytes >= (this.limits.bytes - last.bytes) / 2 ||
        disk.files - since.files >= (this.limits.files - last.files) / 2;
      const next = (): void => {
        if (this.watching) this.timer = setTimeout(look, LOOK_MS).unref();
      };
      if (!grown) return next();
      this.diskAtWalk = disk;
      void this.measure().then((usage) => {
        if (!this.watching) return;
        if (usage?.over) {
          this.watching = false;
          onOver(usage);
        } else next();
      });
    };
    this.watching = true;
    this.timer = setTimeout(look, LOOK_MS).unref();
  }

  /** The runner ended: stop watching; what it wrote is measured before the next start. */
  unwatch(): void {
    this.watching = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.stale = true;
  }

  /** One walk at a time; its result becomes the folder's usage. */
  private measure(): Promise<FolderUsage | undefined> {
    this.measuring ??= (async () => {
      this.stale = false;
      try {
        const usage = await measureFolder(this.folder, this.limits);
        this.usage = usage;
        this.measuredAt = Date.now();
        this.unread = true;
        return usage;
      } catch (err) {
        this.log.warn(`cannot measure the session folder ${this.folder}: ${errorMessage(err)}`);
        this.usage = { bytes: 0, files: 0, over: false };
        this.measuredAt = Date.now();
        this.unread = true;
        return undefined;
      } finally {
        this.measuring = undefined;
      }
    })();
    return this.measuring;
  }
}

/** Used bytes and inodes of the file system that holds `folder`; undefined when it cannot be asked. */
function diskUsed(folder: string): { bytes: number; files: number } | undefined {
  try {
    const s = fs.statfsSync(folder);
    return { bytes: (s.blocks - s.bfree) * s.bsize, files: s.files - s.ffree };
  } catch {
    return undefined; // the next look walks the folder instead
  }
}

/** The chat's notice: what the folder holds, which limit, what to do. */
export function overQuotaNotice(usage: FolderUsage, limits: SessionDiskLimits): string {
  const what =
    usage.bytes > limits.bytes
      ? `it holds more than ${formatBytes(limits.bytes)}, its limit (PINCER_SESSION_DISK)`
      : `it holds more than ${limits.files} files and folders, its limit (PINCER_SESSION_FILES)`;
  return `The agent's session folder is full: ${what}. The agent was stopped and cannot answer until files are removed from its folder; the administrator can do that or raise the limit.`;
}

function formatBytes(bytes: number): string {
  for (const [unit, factor] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const)
    if (bytes >= factor) return `${Number((bytes / factor).toFixed(1))} ${unit}`;
  return `${bytes} bytes`;
}
