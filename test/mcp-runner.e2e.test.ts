import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { readRunnerState } from '../src/db/state.js';
import { closeAllMcpClients, putBatchInFlight, startMcpClient } from './support/mcp-client.js';
import { BUILT_CLI, startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';
import { recorded, recordFile, type Recorded } from './support/mock-record.js';

/**
 * `pincer mcp` with a real runner: the runner hands the provider the server in `mcpServers` and the tools'
 * instructions in the system prompt; a client started exactly as the provider would start it sees the routing of the
 * batch the runner has in flight, across processes. Also: start-up errors and the latency of a send_message call.
 */
afterEach(async () => {
  expect(await closeAllMcpClients()).toBe(0);
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

function recordedQueries(s: TestSession): Recorded[] {
  return recorded(s).filter((entry) => entry.type === 'query');
}

describe('pincer mcp with a real runner', () => {
  it('sees the routing of the batch the runner has in flight, and writes in_reply_to', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, {
      MOCK_DELAY_MS: '30000',
      MOCK_RECORD_FILE: recordFile(s),
      PINCER_STOP_GRACE_MS: '100',
      TZ: 'Asia/Tokyo',
    });
    await runner.ready();
    const msg = s.chat('summarise the thread', { platformId: 'C42', channelType: 'slack', threadId: '1700000000.1' });
    await waitFor('batch in flight', () => readRunnerState(s.db)?.batchIds.includes(msg.id));
    const [query] = await waitFor('the query', () => recordedQueries(s).length > 0 && recordedQueries(s));

    expect(query!.systemPrompt).toContain('## Pincer tools');
    const server = query!.mcpServers!.pincer!;
    if (server.type === 'http') throw new Error("Pincer's own server is a stdio server");
    expect(server).toEqual({
      command: process.execPath,
      // the runner's V8 flags: an idle `pincer mcp` is a session process too
      args: ['--max-semi-space-size=1', '--liftoff-only', expect.stringMatching(/dist\/src\/cli\/main\.js$/), 'mcp'],
      env: expect.objectContaining({ PINCER_WORKSPACE: s.paths.root, TZ: 'Asia/Tokyo', PINCER_STOP_GRACE_MS: '100' }),
      required: true,
    });

    // Started the way the provider starts it: that command, those args, only that environment.
    const mcp = await startMcpClient(s.paths.root, {}, { command: server.command, args: server.args, env: server.env });
    const sent = await mcp.call('send_message', { text: 'on it, give me a minute' });
    expect(sent.isError).toBe(false);
    const row = s.outbound().find((r) => r.content.includes('on it'))!;
    expect(row).toMatchObject({ in_reply_to: msg.id, platform_id: 'C42', channel_type: 'slack', thread_id: '1700000000.1' });
    expect(sent.text).toBe(`Sent as message ${row.seq}.`);
    // A tool call over the 1 MiB message limit is refused; the server the runner configured goes on serving its batch.
    const huge = await mcp.call('send_message', { text: 'z'.repeat(12 * 1024 * 1024) });
    expect(huge).toMatchObject({ isError: true, text: expect.stringContaining('is 12.0 MiB, over the 1 MiB limit of one MCP message') });
    const after = await mcp.call('send_message', { text: 'still here' });
    expect(after.isError).toBe(false);
    expect(s.outbound().find((r) => r.content.includes('still here'))).toMatchObject({ in_reply_to: msg.id, platform_id: 'C42' });

    await mcp.close();
    expect(await runner.stop()).toBe(0);
  });

  it('once the first prompt is answered, runner_state carries the routing of the pushed follow-up', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_DELAY_MS: '1500', PINCER_STOP_GRACE_MS: '100' });
    await runner.ready();
    const first = s.chat('first', { platformId: 'C1', channelType: 'slack' });
    await waitFor('first in flight', () => readRunnerState(s.db)?.batchIds.includes(first.id));
    const second = s.chat('second', { platformId: 'D2', channelType: 'discord' });
    await waitFor('second pushed', () => readRunnerState(s.db)?.batchIds.includes(second.id));
    expect(readRunnerState(s.db)!.routing).toMatchObject({ inReplyTo: first.id, platformId: 'C1' });
    await waitFor('first answered', () => s.outbound().length === 1);
    expect(readRunnerState(s.db)!.routing).toMatchObject({ inReplyTo: second.id, platformId: 'D2', channelType: 'discord' });
    await waitFor('second answered', () => s.outbound().length === 2);
    expect(s.outbound()[1]).toMatchObject({ in_reply_to: second.id, platform_id: 'D2' });
    expect(await runner.stop()).toBe(0);
  });
});

describe('pincer mcp start-up', () => {
  it.each([
    ['a missing workspace', (root: string) => path.join(root, 'nope'), /^[0-9T:.Z-]+ \[mcp\] error: workspace not found: .*nope/],
    ['a workspace without session.db', (root: string) => root, /^[0-9T:.Z-]+ \[mcp\] error: session database not found: /],
  ])('exits 2 with one clear line for %s', (_name, workspace, message) => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-mcp-start-'));
    try {
      const result = spawnSync(process.execPath, [BUILT_CLI, 'mcp'], {
        env: { PATH: process.env.PATH, PINCER_WORKSPACE: workspace(root) },
        input: '',
        encoding: 'utf8',
      });
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toMatch(message);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('send_message latency', () => {
  it('client call → row committed, over 200 calls (reported, not asserted: npm run bench owns the targets)', async () => {
    const s = createTestSession();
    const msg = s.chat('hello', { platformId: 'C1', channelType: 'slack' });
    putBatchInFlight(s.db, msg.id);
    const mcp = await startMcpClient(s.paths.root);
    for (let i = 0; i < 10; i += 1) await mcp.call('send_message', { text: `warm-up ${i}` });
    const before = s.outbound().length;
    const samples: number[] = [];
    for (let i = 0; i < 200; i += 1) {
      const started = performance.now();
      const result = await mcp.call('send_message', { text: `message ${i}` });
      samples.push(performance.now() - started);
      expect(result.isError).toBe(false);
    }
    // The server answers only after the insert has committed: every row is there, in order, with the routing.
    const rows = s.outbound().slice(before);
    expect(rows.map((row) => JSON.parse(row.content).text)).toEqual(samples.map((_, i) => `message ${i}`));
    expect(rows.every((row) => row.in_reply_to === msg.id && row.platform_id === 'C1')).toBe(true);
    samples.sort((a, b) => a - b);
    const at = (q: number): string => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!.toFixed(2);
    console.log(`[bench] mcp send_message call → row committed, n=200: p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`);
    await mcp.close();
  });
});
