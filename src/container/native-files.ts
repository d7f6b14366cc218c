import fs from 'node:fs';
import path from 'node:path';

/**
 * The ELF files of an installed app: native addons (`*.node`, e.g. better-sqlite3) and executables such as the Claude
 * Code and OpenCode binaries that the SDKs start. They are mounted with the app but load their shared libraries from
 * the image, so the image must carry those libraries too.
 */
export function nativeFilesUnder(appRoot: string): string[] {
  const found = new Set<string>();
  const walk = (dir: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      // an unreadable folder has no native files to list
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(full);
      } else if (entry.isFile() && (entry.name.endsWith('.node') || isExecutable(full)) && isElf(full)) {
        found.add(full);
      }
    }
  };
  walk(path.join(appRoot, 'node_modules'));
  return [...found].sort();
}

function isExecutable(file: string): boolean {
  try {
    return (fs.statSync(file).mode & 0o111) !== 0;
  } catch {
    // gone or unreadable: not an executable
    return false;
  }
}

function isElf(file: string): boolean {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const magic = Buffer.alloc(4);
    return fs.readSync(fd, magic, 0, 4, 0) === 4 && magic.equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  } catch {
    // unreadable: not an ELF file
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
