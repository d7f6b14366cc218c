/**
 * A home is self-contained and movable: the central DB stores a session folder inside the home relative to it, and a
 * session's `agent/` and `global/` links point relatively into the home. After `cp -a ~/.pincer elsewhere` (or `mv`),
 * a host on the copy works on the copy, never writing into the original.
 *
 * Homes written before paths were relative are adopted when a host opens them: absolute folders inside the home
 * become relative; an absolute folder of another home whose session folder exists here under the same
 * `sessions/<name>` (the copy of a copied home) is taken to be this one; absolute links are rewritten to relative ones
 * into this home.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../shared/log.js';

/** How a folder is stored: relative when it is inside the home, else absolute. */
export function storedFolder(home: string, folder: string): string {
  const relative = path.relative(home, folder);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : path.resolve(folder);
}

/** A stored folder as an absolute path (relative ones are relative to the home). */
export function resolvedFolder(home: string | undefined, stored: string): string {
  return path.isAbsolute(stored) || home === undefined ? stored : path.resolve(home, stored);
}

/** The stored value this home should hold for `stored`, or undefined when it is right as it is. */
export function adoptedFolder(home: string, stored: string): string | undefined {
  if (!path.isAbsolute(stored)) return undefined;
  const inside = storedFolder(home, stored);
  if (!path.isAbsolute(inside)) return inside;
  // A folder of another home (this one was copied or moved): the same sessions/<name> here is this home's own.
  const parent = path.dirname(stored);
  if (path.basename(parent) !== 'sessions') return undefined;
  const local = path.join('sessions', path.basename(stored));
  return fs.existsSync(path.join(home, local, 'session.db')) ? local : undefined;
}

/**
 * `link` → `target` as a relative link, so the pair moves with the home. A missing link is created; a link elsewhere
 * (absolute, or into another home) is replaced; a real folder (an older chat session's own `agent/`) stays.
 */
export function linkInsideHome(target: string, link: string, log?: Logger): void {
  fs.mkdirSync(target, { recursive: true });
  const wanted = path.relative(path.dirname(link), target);
  let current: string | undefined;
  try {
    const stat = fs.lstatSync(link);
    if (!stat.isSymbolicLink()) return;
    current = fs.readlinkSync(link);
  } catch {
    // no link yet: made now
    fs.symlinkSync(wanted, link, 'dir');
    return;
  }
  if (current === wanted) return;
  fs.rmSync(link);
  fs.symlinkSync(wanted, link, 'dir');
  log?.info(`${link}: now links to ${wanted} (was ${current})`);
}
