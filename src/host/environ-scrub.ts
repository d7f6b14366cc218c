import fs from 'node:fs';

/**
 * Take secrets out of this process's own environment block. `/proc/<pid>/environ` shows the block the process
 * started with, whatever `delete process.env.X` did since, and any process of the same user can read it — an agent
 * in a process runner included. So once the host has read its keys (the credential proxy keeps them), it overwrites
 * their values in place, through `/proc/self/mem`, and unsets them. Linux only; elsewhere (or if the kernel refuses)
 * it returns false and the caller logs it. This narrows what a same-user process finds; it is no sandbox.
 */
export function scrubOwnEnvironment(names: readonly string[], keep: readonly string[] = []): boolean {
  const present = names.filter((name) => process.env[name]);
  // `keep`: still needed in this process (a platform adapter reads its token again when it reconnects): the value
  // moves to the heap (setenv), which /proc/<pid>/environ does not show
  const kept = new Map(present.filter((name) => keep.includes(name)).map((name) => [name, process.env[name]!]));
  if (present.length === 0) return true;
  let ok = false;
  try {
    // /proc/self/stat fields 50 and 51 (1-based) are env_start and env_end; the comm field may hold spaces.
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3
    const start = Number(fields[47]); // user-space addresses stay below 2^53
    const end = Number(fields[48]);
    const length = end - start;
    if (length > 0 && length < 16 * 1024 * 1024) {
      const fd = fs.openSync('/proc/self/mem', 'r+');
      try {
        const block = Buffer.alloc(length);
        fs.readSync(fd, block, 0, length, start);
        let changed = false;
        let offset = 0;
        while (offset < length) {
          const nul = block.indexOf(0, offset);
          const stop = nul === -1 ? length : nul;
          const entry = block.toString('latin1', offset, stop);
          const eq = entry.indexOf('=');
          if (eq > 0 && present.includes(entry.slice(0, eq))) {
            block.fill('x'.charCodeAt(0), offset + eq + 1, stop);
            changed = true;
          }
          offset = stop + 1;
        }
        if (changed) fs.writeSync(fd, block, 0, length, start);
        ok = true;
      } finally {
        fs.closeSync(fd);
      }
    }
  } catch {
    // /proc not writable here: the caller logs that the environment could not be blanked
    ok = false;
  }
  for (const name of present) delete process.env[name];
  for (const [name, value] of kept) process.env[name] = value;
  return ok;
}
