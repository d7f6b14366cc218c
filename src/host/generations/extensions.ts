import fs from 'node:fs';
import path from 'node:path';

/**
 * Whether a group folder declares extensions (the conventional `extensions/` folder, or an `extensions` entry in its
 * package manifest): they may register runtimes the host does not know, since only runners run their code.
 */
export function declaresExtensions(dir: string): boolean {
  if (fs.existsSync(path.join(dir, 'extensions'))) return true;
  try {
    return /"extensions"\s*:/.test(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  } catch {
    return false; // no manifest: nothing declared beyond the conventional folder
  }
}
