import { describe, expect, it } from 'vitest';
import { dbFaultScenario } from '../bench/fault-db.js';
import { mcpKillsScenario } from '../bench/fault-mcp.js';
import { diskFullScenario, formatFaultTable, killsScenario } from '../bench/fault.js';
import { onPath } from './support/dockerd.js';

/**
 * The short version of the fault suite (`npm run fault` runs the long one): a real host with the mock provider, a
 * stream of messages while runners, MCP servers and the host are SIGKILLed at random moments, a full disk (root
 * only), and one session's database made read-only (root only), deleted, or damaged. Nothing accepted is lost, the
 * host recovers, and a kill never duplicates a reply. The kills run with process runners and,
 * where bubblewrap is installed, with bwrap runners too (Docker's run in test/runner-modes.e2e.test.ts, on its daemon):
 * no session ever has two live runners, and none outlives the last host. Then with each session served by its own
 * `pincer session-serve` process, killed too: never two of them for one session either.
 */
const bwrapSkip = onPath('bwrap') ? undefined : 'bubblewrap is not installed (.ci/run installs it as root)';
if (bwrapSkip) console.warn(`[fault] skipping the kills with bwrap runners: ${bwrapSkip}`);
describe('fault suite (short)', () => {
  it('loses nothing under runner, MCP server and host kills, and recovers from a full disk and a read-only, deleted or damaged database', async () => {
    const rows = [
      await killsScenario(80, 1),
      await mcpKillsScenario(6),
      await diskFullScenario(5),
      await dbFaultScenario('read-only', 40),
      await dbFaultScenario('deleted', 40),
      await dbFaultScenario('damaged', 40),
    ];
    // each session in its own `pincer session-serve` process: those are killed too, and relaunched with a new epoch
    const kills = [rows[0]!, ...(bwrapSkip ? [] : [await killsScenario(60, 1, 'bwrap')]), await killsScenario(60, 1, 'session-serve')];
    rows.push(...kills.slice(1));
    process.stdout.write(`${formatFaultTable(rows)}\n`);
    for (const row of kills) {
      expect(row.mostRunners, row.scenario).toBe(1);
      expect(row.note, row.scenario).toBeUndefined(); // no runner outlived its host
      // every mock answer completes the messages it answers in its own transaction, and a message a killed
      // supervisor's runner still holds is left alone until that runner has ended: a kill never repeats one
      expect(row.duplicated, row.scenario).toBe(0);
    }
    for (const row of rows) {
      expect(row.lost, row.scenario).toBe(0);
      if (!row.note) expect(row.recoveryMs, row.scenario).not.toBeNull();
    }
    expect(kills.at(-1)!.scenario).not.toMatch(/\(0 session process/); // some session process or runner was killed
    // a read-only or deleted file loses no answer's record: none may come twice (a damaged one may, at-least-once)
    for (const row of rows.slice(3, 5)) expect(row.duplicated, row.scenario).toBe(0);
    expect(rows[0]!.sent).toBeGreaterThan(0);
    expect(rows[1]!.scenario).not.toMatch(/^MCP server SIGKILLs \(0,/); // some MCP server was really killed
  }, 600_000);
});
