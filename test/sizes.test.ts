import { describe, expect, it } from 'vitest';
import { mb } from '../src/runner/media/acquire.js';

describe('a file size for a person', () => {
  it.each([
    [0, '0 bytes'],
    [1, '1 byte'],
    [17, '17 bytes'],
    [3500, '3.4 KB'],
    [21 * 1024 * 1024, '21.0 MB'],
  ])('%i bytes: %s', (bytes, text) => {
    expect(mb(bytes)).toBe(text);
  });
});
