import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from './fake-anthropic.js';
import { startRunner, stopAllRunners, type RunnerHandle } from './runner-harness.js';
import { cleanupSessions } from './session.js';
import { waitFor } from './wait.js';

/**
 * Environment for running the real Claude Code CLI against a fake model server: its own CLAUDE_CONFIG_DIR per test
 * (sessions and transcripts never shared), a fake key, no traffic but model calls, fast failure on API errors.
 * `leftoverClaudeProcesses()` finds any process still running with one of these config dirs (the CLI, MCP servers).
 */
const configDirs: string[] = [];
const fakes: FakeAnthropic[] = [];

/** A fake Anthropic server closed by `cleanupClaude()`. */
export async function fakeAnthropic(): Promise<FakeAnthropic> {
  const fake = await startFakeAnthropic();
  fakes.push(fake);
  return fake;
}

/** Start the real runner on `workspace` with `env` (from claudeTestEnv) and wait until it is ready. */
export async function startClaudeRunner(workspace: string, env: Record<string, string>): Promise<RunnerHandle> {
  const runner = startRunner(workspace, env);
  await runner.ready();
  return runner;
}

/**
 * For afterEach, after the runners are stopped: close the fake servers, wait for every Claude Code process of this
 * file to be gone (returns how many had to be killed), remove the config dirs.
 */
export async function cleanupClaude(): Promise<number> {
  const closing = fakes.splice(0);
  await Promise.all(closing.map((fake) => fake.close()));
  const left = await settleClaudeProcesses();
  removeClaudeConfigDirs();
  // a failing step is reported after everything is cleaned up
  const stepErrors = closing.flatMap((fake) => fake.stepErrors);
  if (stepErrors.length > 0) throw new Error(`a scripted model step failed: ${stepErrors.map((e) => e.message).join('; ')}`);
  return left;
}

/**
 * The `afterEach` of the runner-level Claude tests: clean up everything first (runners, Claude Code processes, test
 * sessions), then prove nothing was left. Call once at the top of the test file.
 */
export function cleanUpClaudeRunsAfterEach(): void {
  afterEach(async () => {
    const left = { runners: await stopAllRunners(), claude: await cleanupClaude() };
    cleanupSessions();
    expect(left).toEqual({ runners: 0, claude: 0 });
  });
}

export function claudeTestEnv(fake: FakeAnthropic | { url: string }, extra: Record<string, string> = {}): Record<string, string> {
  const configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-claude-config-'));
  configDirs.push(configDir);
  return {
    AGENT_PROVIDER: 'claude',
    ANTHROPIC_BASE_URL: fake.url,
    ANTHROPIC_API_KEY: 'sk-ant-fake-test-key',
    CLAUDE_CONFIG_DIR: configDir,
    // Claude Code's Bash tool starts a login shell: with the machine's own HOME it would run that user's ~/.bashrc (a
    // stale pyenv lock there once held every Bash call for a minute); the test's own empty home keeps it hermetic.
    HOME: configDir,
    IS_SANDBOX: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    CLAUDE_CODE_MAX_RETRIES: '1',
    ...extra,
  };
}

/** pids of live processes whose environment names one of this file's config dirs. */
export function leftoverClaudeProcesses(): number[] {
  return processesWithEnv(configDirs.map((dir) => `CLAUDE_CONFIG_DIR=${dir}`));
}

/** pids of live processes (other than this one) whose environment has one of `entries` (`NAME=value`). */
export function processesWithEnv(entries: string[]): number[] {
  if (entries.length === 0) return [];
  const markers = entries.map((entry) => `${entry}\0`);
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let environ: string;
    try {
      environ = fs.readFileSync(`/proc/${entry}/environ`, 'latin1');
    } catch {
      continue; // gone already, or not ours to read
    }
    if (markers.some((marker) => environ.includes(marker))) pids.push(Number(entry));
  }
  return pids;
}

/**
 * For afterEach: wait (with a deadline) until no Claude Code process of this file is left; kill stragglers so one
 * failure does not leak into the next test, and return how many there were at the deadline.
 */
export async function settleClaudeProcesses(timeoutMs = 10_000): Promise<number> {
  try {
    await waitFor('Claude Code processes to exit', () => leftoverClaudeProcesses().length === 0, { timeoutMs, intervalMs: 50 });
    return 0;
  } catch {
    const left = leftoverClaudeProcesses();
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    return left.length;
  }
}

export function removeClaudeConfigDirs(): void {
  for (const dir of configDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}
