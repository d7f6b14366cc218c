import fs from 'node:fs';
import path from 'node:path';
import { afterEach, expect } from 'vitest';
import { closeFakeOpenAIs } from './fake-openai.js';
import { reapSessionProcesses, type SessionProcess } from './processes.js';
import { stopAllRunners } from './runner-harness.js';
import { cleanupSessions, createTestSession, type TestSession } from './session.js';

/**
 * Set-up shared by the end-to-end tests of the providers that run an OpenAI-compatible CLI or server (Codex,
 * OpenCode): sessions with a known system prompt, generous waits (their binaries start in seconds on two busy
 * cores), and an `afterEach` that stops the runners, then whatever they started, and proves nothing was left.
 */
export const SLOW = { timeoutMs: 45_000 };
export const SYSTEM_PROMPT = 'You are Pincer-under-test.';

const sessions: TestSession[] = [];

/** Clean `session` up (and reap what it started) after the test. */
export function trackSession(session: TestSession): TestSession {
  sessions.push(session);
  return session;
}

/** A session whose agent folder has the test's CLAUDE.md; cleaned up after the test. */
export function providerSession(prefix: string): TestSession {
  const session = trackSession(createTestSession(prefix));
  fs.writeFileSync(path.join(session.paths.agent, 'CLAUDE.md'), SYSTEM_PROMPT);
  return session;
}

/** The text of every chat row the agent wrote. */
export const replies = (session: TestSession): string[] => session.outboundContents().map((content) => String(content.text));

/** Register the clean-up: call once at the top of the test file. */
export function cleanUpProviderRunsAfterEach(): void {
  afterEach(async () => {
    // Clean up everything first (runners, then anything they started), then say what was left behind.
    const runnersLeft = await stopAllRunners();
    const processesLeft: SessionProcess[] = [];
    for (const session of sessions.splice(0)) processesLeft.push(...(await reapSessionProcesses(session.paths.root)));
    await closeFakeOpenAIs();
    cleanupSessions();
    expect(runnersLeft).toBe(0);
    expect(processesLeft).toEqual([]);
  });
}
