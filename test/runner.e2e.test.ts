import { afterEach, describe, expect, it } from 'vitest';
import { startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

afterEach(async () => {
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

describe('pincer runner with the mock provider', () => {
  it('answers a pending chat message and completes it', async () => {
    const session = createTestSession();
    const runner = startRunner(session.paths.root);
    await runner.ready();
    const { id } = session.chat('hello');
    const [reply] = await waitFor('a reply', () => session.outbound().length > 0 && session.outbound());
    expect(reply!.in_reply_to).toBe(id);
    expect(JSON.parse(reply!.content).text).toContain('hello</message>');
    await waitFor('completed', () => session.inbound(id).status === 'completed');
    expect(session.inbound(id).tries).toBe(1);
    expect(await runner.stop()).toBe(0);
  });
});
