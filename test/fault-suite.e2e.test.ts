import { describe, expect, it } from 'vitest';
import { diskFullScenario, formatFaultTable, killsScenario } from '../bench/fault.js';

/**
 * The short version of the fault suite (`npm run fault` runs the long one): a real host with the mock provider, a
 * stream of messages while runners and the host are SIGKILLed at random moments, and a full disk (root only). Nothing
 * accepted is lost; a kill outside an open query never duplicates a reply.
 */
describe('fault suite (short)', () => {
  it('loses nothing under runner and host kills, and recovers from a full disk', async () => {
    const rows = [await killsScenario(80, 1), await diskFullScenario(5)];
    process.stdout.write(`${formatFaultTable(rows)}\n`);
    for (const row of rows) {
      expect(row.lost, row.scenario).toBe(0);
      if (!row.note) expect(row.recoveryMs, row.scenario).not.toBeNull();
    }
    expect(rows[0]!.sent).toBeGreaterThan(0);
  }, 300_000);
});
