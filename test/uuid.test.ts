import { describe, expect, it } from 'vitest';
import { randomUUID } from '../src/shared/uuid.js';

describe('randomUUID (row ids without node:crypto)', () => {
  it('makes version 4, RFC 4122 variant UUIDs, all different, across refills of its block', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const id = randomUUID();
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(1000); // 1000 × 16 bytes is four blocks of 4 KiB
  });
});
