import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ContainerError } from './errors.js';

/**
 * A passwd and group file naming the runner's uid, mounted read-only over the image's: Node's `os.userInfo()`, bash's
 * prompt and tools an agent runs fail or complain for a uid with no entry. The files depend only on `uid:gid`, so
 * there is one pair per user under the temp dir, shared by every launch and written atomically (temp + rename):
 * nothing to clean up, nothing left behind by a host that dies.
 */
export interface IdentityFiles {
  passwd: string;
  group: string;
}

export function identityFiles(user: string, root = path.join(os.tmpdir(), `pincer-identity-${process.getuid?.() ?? 0}`)): IdentityFiles {
  const [uid = '0', gid = uid] = user.split(':');
  privateDirectory(root);
  const dir = path.join(root, `${uid}-${gid}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const users = ['root:x:0:0:root:/tmp:/bin/sh', 'nobody:x:65534:65534:nobody:/tmp:/bin/sh'];
  if (uid !== '0' && uid !== '65534') users.push(`pincer:x:${uid}:${gid}:pincer runner:/tmp:/bin/sh`);
  const groups = ['root:x:0:', 'nogroup:x:65534:'];
  if (gid !== '0' && gid !== '65534') groups.push(`pincer:x:${gid}:`);
  const files = { passwd: path.join(dir, 'passwd'), group: path.join(dir, 'group') };
  writeIfChanged(files.passwd, `${users.join('\n')}\n`);
  writeIfChanged(files.group, `${groups.join('\n')}\n`);
  return files;
}

function writeIfChanged(file: string, content: string): void {
  try {
    if (fs.readFileSync(file, 'utf8') === content) return;
  } catch {
    // not there yet
  }
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  fs.writeFileSync(tmp, content, { mode: 0o644 });
  fs.renameSync(tmp, file);
}

/**
 * The temp dir is shared with other users: only use a folder that is ours, not a symlink, and closed to others, so
 * nobody can make us write a file elsewhere. (The container reads the files through their own bind mounts, so the
 * folder's mode does not matter inside.)
 */
function privateDirectory(dir: string): void {
  try {
    fs.mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const stat = fs.lstatSync(dir);
  const ours = stat.isDirectory() && !stat.isSymbolicLink() && stat.uid === (process.getuid?.() ?? stat.uid) && (stat.mode & 0o077) === 0;
  if (!ours) throw new ContainerError('config', `${dir} is not a private folder of this user (mode 700); remove it`);
}
