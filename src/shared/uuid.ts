import fs from 'node:fs';
import { createRequire } from 'node:module';

/**
 * Random (version 4) UUIDs for row ids, from the kernel's random source read in blocks. node:crypto's `randomUUID`
 * does the same, but loading node:crypto loads the stream modules and Node's whole crypto layer with it (≈ 35
 * built-in modules), which a runner's start-up needs for nothing else (docs/performance.md, "Cold start"). Where
 * /dev/urandom cannot be read (no /dev in a sandbox), node:crypto is used after all.
 */
const BLOCK = 4096;
let pool: Buffer | undefined;
let offset = BLOCK;
let fallback: (() => string) | undefined;

function refill(): boolean {
  pool ??= Buffer.alloc(BLOCK);
  let fd: number | undefined;
  try {
    fd = fs.openSync('/dev/urandom', 'r');
    let filled = 0;
    while (filled < BLOCK) {
      const read = fs.readSync(fd, pool, filled, BLOCK - filled, null);
      if (read <= 0) return false;
      filled += read;
    }
    offset = 0;
    return true;
  } catch {
    // no /dev/urandom here: ids come from node:crypto instead
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

export function randomUUID(): string {
  if (fallback) return fallback();
  if (offset + 16 > BLOCK && !refill()) {
    fallback = (createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto')).randomUUID;
    return fallback();
  }
  const bytes = pool!.subarray(offset, offset + 16);
  // Every UUID takes its own 16 bytes of the block, never reused; the block is overwritten on the next refill.
  offset += 16;
  bytes[6] = (bytes[6]! & 0x0f) | 0x40; // version 4
  bytes[8] = (bytes[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
