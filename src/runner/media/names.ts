import fs from 'node:fs';
import path from 'node:path';

/**
 * File names that come from outside (attachment names, message ids from any writer) made safe to join to a folder:
 * no path separators, no `..`, no control characters, no Windows device names, at most 120 bytes, never empty.
 */
const RESERVED = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?$/i;
const MAX_NAME_BYTES = 120;

export function safeFileName(raw: string, fallback = 'file'): string {
  let name = raw
    .normalize('NFC')
    .replace(/[\p{Cc}\p{Cf}]/gu, '')
    .replace(/[/\\:*?"<>|]/g, '_')
    .trim()
    .replace(/\.{2,}/g, '.')
    .replace(/^\.+/, '')
    .replace(/\.+$/, '');
  if (RESERVED.test(name)) name = `_${name}`;
  if (name.length === 0) name = fallback;
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) {
    const ext = path.extname(name).slice(0, 16);
    let stem = name.slice(0, name.length - ext.length);
    while (Buffer.byteLength(stem + ext) > MAX_NAME_BYTES) stem = stem.slice(0, -1);
    name = stem + ext;
  }
  return name;
}

/** `name` with its extension replaced by `ext` (the type detected from the bytes), when they differ. */
export function withExtension(name: string, ext: string | undefined): string {
  if (!ext) return name;
  const current = path.extname(name).slice(1).toLowerCase();
  const same = current === ext || (current === 'jpeg' && ext === 'jpg') || (current === 'jpg' && ext === 'jpeg');
  if (same) return name;
  const stem = current ? name.slice(0, -(current.length + 1)) : name;
  return safeFileName(`${stem}.${ext}`);
}

/** A name not yet taken in `dir`: `a.png`, `a-2.png`, `a-3.png`, … */
export function uniqueName(dir: string, name: string): string {
  if (!fs.existsSync(path.join(dir, name))) return name;
  const ext = path.extname(name);
  const stem = name.slice(0, name.length - ext.length);
  for (let i = 2; ; i++) {
    const candidate = `${stem}-${i}${ext}`;
    if (!fs.existsSync(path.join(dir, candidate))) return candidate;
  }
}
