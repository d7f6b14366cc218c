import { describe, expect, it } from 'vitest';
import { claudeTestEnv, cleanUpClaudeRunsAfterEach, fakeAnthropic, startClaudeRunner } from './support/claude.js';
import { createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/**
 * A measurement, not a test of speed (no timing assertion): insert → first `messages_out` row for a one-tool turn
 * (the model calls `mcp__pincer__send_message`, then answers), ten times on one runner, each a new query. Times come
 * from the rows' own timestamps. Run with `PINCER_MEASURE=1 npx vitest run test/claude-latency.test.ts`.
 */
cleanUpClaudeRunsAfterEach();

describe.runIf(process.env.PINCER_MEASURE === '1')('Claude provider latency (a measurement, not a check: runs only with PINCER_MEASURE=1)', () => {
  it.each(['0', '1'])(
    'insert → first messages_out row, one-tool turn, 10 runs (PINCER_CLAUDE_PREWARM=%s)',
    async (prewarm) => {
      const fake = await fakeAnthropic();
      const session = createTestSession();
      const runner = await startClaudeRunner(session.paths.root, claudeTestEnv(fake, { PINCER_CLAUDE_PREWARM: prewarm }));
      const samples: number[] = [];
      const toModel: number[] = [];
      for (let i = 0; i < 10; i++) {
        // A person's next message comes seconds later: with prewarm, give the spare the time it would have.
        if (prewarm === '1' && i > 0) {
          await waitFor('the spare', () => runner.stderr().split('prewarmed Claude Code ready').length - 1 === i, { timeoutMs: 30_000 });
        }
        fake.script({ toolUse: { name: 'mcp__pincer__send_message', input: { text: `progress ${i}` } } }, { text: `done ${i}` });
        const { id } = session.chat(`run ${i}`);
        await waitFor('completed', () => session.inbound(id).status === 'completed', { timeoutMs: 30_000 });
        const inserted = Date.parse(session.inbound(id).timestamp);
        const first = session.outbound().find((row) => row.in_reply_to === id)!;
        expect(JSON.parse(first.content)).toEqual({ text: `progress ${i}` });
        samples.push(Date.parse(first.timestamp) - inserted);
        const request = fake.modelRequests().find((r) => r.lastUserText.includes(`run ${i}</message>`))!;
        toModel.push(request.receivedAt - inserted);
      }
      const sorted = [...samples].sort((a, b) => a - b);
      const median = (sorted[4]! + sorted[5]!) / 2;
      const medianOf = (values: number[]): number => {
        const s = [...values].sort((a, b) => a - b);
        return (s[4]! + s[5]!) / 2;
      };
      console.log(
        `[measure] prewarm=${prewarm} insert → first messages_out row (one-tool turn): median ${median} ms, min ${sorted[0]} ms, ` +
          `max ${sorted[9]} ms; samples ${samples.join(', ')}; of which insert → first model request: median ${medianOf(toModel)} ms`,
      );
      expect(samples).toHaveLength(10);
      expect(await runner.stop()).toBe(0);
    },
    300_000,
  );
});
