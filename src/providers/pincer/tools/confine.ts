import fs from 'node:fs';
import path from 'node:path';

/**
 * Where the built-in runtime's file tools may act: the agent folder and the extra directories the runner gives the
 * agent (`extra/*`). A path is resolved against the agent folder, then its nearest existing ancestor is resolved
 * through links; it must stay inside one of the roots (also resolved through links), so neither `..` nor a symlink
 * the agent planted leads out.
 */
export class Confinement {
  private readonly roots: string[];

  constructor(
    readonly cwd: string,
    extraRoots: readonly string[] = [],
  ) {
    this.roots = [cwd, ...extraRoots].map((root) => realOrSelf(root));
  }

  /** The absolute path for `requested`, or an Error naming the path and the allowed folders. */
  resolve(requested: string): string {
    if (typeof requested !== 'string' || requested.trim() === '') throw new Error('path is empty');
    if (requested.includes('\0')) throw new Error('path contains a NUL byte');
    const absolute = path.resolve(this.cwd, requested);
    const real = realThroughAncestors(absolute);
    if (!this.roots.some((root) => real === root || real.startsWith(root + path.sep))) {
      throw new Error(`${requested} is outside the agent folder (allowed: ${this.roots.join(', ')})`);
    }
    return absolute;
  }

  /** The path as the agent should see it: relative to the agent folder when inside it. */
  display(absolute: string): string {
    const relative = path.relative(this.cwd, absolute);
    return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : absolute;
  }
}

function realOrSelf(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    // a folder not made yet confines by its resolved path
    return path.resolve(dir);
  }
}

/** realpath of the nearest existing ancestor, with the not-yet-existing rest appended. */
function realThroughAncestors(absolute: string): string {
  const rest: string[] = [];
  let current = absolute;
  for (;;) {
    try {
      return path.join(fs.realpathSync(current), ...rest.reverse());
    } catch {
      // this part does not exist yet: its parent is resolved instead
      const parent = path.dirname(current);
      if (parent === current) return absolute;
      rest.push(path.basename(current));
      current = parent;
    }
  }
}
