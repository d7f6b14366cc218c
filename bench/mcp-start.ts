import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { PACKAGE_ROOT } from '../src/shared/package-root.js';
import { closeFakeOpenAIs, startFakeOpenAI, type FakeOpenAI } from '../test/support/fake-openai.js';
import { RunnerSession } from './runner-session.js';

/**
 * How much the user's MCP servers delay the first model call of the built-in runtime: a fresh runner with a message
 * already waiting, from its spawn to the fake model server receiving the first request, with no server of the
 * user's (the baseline), 1, 3 and 10 healthy ones (the registry's server-memory, each its own process, started in
 * parallel), and with one that never answers (the misbehaving server's hang-at-start), which the turn waits for
 * only until the start deadline (`PINCER_MCP_START_MS`, shortened here so the bench stays short).
 *
 * The same-run yardstick: the same 3 and 10 servers started by a bare MCP client in the bench's own process, once all
 * at once (what the servers' own start costs on this machine: each is a node process loading the MCP SDK, about half a
 * second of CPU) and once one after another (what a client connecting them in turn would cost).
 */
export interface McpStartSamples {
  /** ms from spawn to the first model request, per sample */
  none: number[];
  one: number[];
  three: number[];
  ten: number[];
  neverStarts: number[];
  /** ms for a bare SDK client to start the same servers and list their tools: all at once, and one after another */
  bare: { parallel3: number[]; parallel10: number[]; serial3: number[]; serial10: number[] };
  /** the start deadline the runs had */
  startMs: number;
}

const MEMORY = path.join(PACKAGE_ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const MISBEHAVING = path.join(PACKAGE_ROOT, 'test/support/misbehaving-mcp-server.mjs');
const START_MS = 3000;

type Servers = (dir: string) => Record<string, unknown>;
const healthy =
  (count: number): Servers =>
  (dir) =>
    Object.fromEntries(
      Array.from({ length: count }, (_, i) => [
        `memory${i}`,
        { command: process.execPath, args: [MEMORY], env: { MEMORY_FILE_PATH: path.join(dir, `memory${i}.jsonl`) } },
      ]),
    );
const neverStarts: Servers = () => ({ stuck: { command: process.execPath, args: [MISBEHAVING], env: { MISBEHAVE: 'hang-at-start' } } });

export async function measureMcpStart(samples: number): Promise<McpStartSamples> {
  const fake = await startFakeOpenAI();
  fake.setDefault({ text: 'ok' });
  try {
    const bare: McpStartSamples['bare'] = { parallel3: [], parallel10: [], serial3: [], serial10: [] };
    const result: McpStartSamples = { none: [], one: [], three: [], ten: [], neverStarts: [], bare, startMs: START_MS };
    // Taking turns, so a change in the machine's load falls on every variant alike; the first round is a warm-up.
    for (let i = -1; i < samples; i++) {
      const none = await firstCall(fake, () => ({}));
      const one = await firstCall(fake, healthy(1));
      const three = await firstCall(fake, healthy(3));
      const ten = await firstCall(fake, healthy(10));
      const stuck = await firstCall(fake, neverStarts);
      const parallel3 = await bareStart(3, 'parallel');
      const parallel10 = await bareStart(10, 'parallel');
      const serial3 = await bareStart(3, 'serial');
      const serial10 = await bareStart(10, 'serial');
      if (i < 0) continue;
      bare.parallel3.push(parallel3);
      bare.parallel10.push(parallel10);
      bare.serial3.push(serial3);
      bare.serial10.push(serial10);
      result.none.push(none);
      result.one.push(one);
      result.three.push(three);
      result.ten.push(ten);
      result.neverStarts.push(stuck);
    }
    return result;
  } finally {
    await closeFakeOpenAIs();
  }
}

/** One fresh runner: spawn → the fake model server's first request (ms). */
async function firstCall(fake: FakeOpenAI, servers: Servers): Promise<number> {
  const before = fake.requests.length;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-mcp-'));
  // performance.now() and the fake's Date.now() stamps on one clock
  const offset = Date.now() - performance.now();
  const session = await RunnerSession.start({
    mode: 'watch',
    pendingText: 'bench-first-call',
    config: { mcpServers: servers(dir) },
    env: {
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/bench',
      OPENAI_BASE_URL: fake.baseUrl,
      PINCER_MODEL_MAX_RETRIES: '0',
      PINCER_MCP_START_MS: String(START_MS),
    },
  });
  try {
    const request = await session.until('the first model request', () => fake.requests.slice(before).find((r) => !r.title), 60_000, 5);
    return request.at - offset - session.spawnedAt;
  } finally {
    await session.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A bare SDK client starts `count` server-memory processes and lists their tools (ms): all at once or in turn. */
async function bareStart(count: number, how: 'parallel' | 'serial'): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-mcp-bare-'));
  const clients: Client[] = [];
  const one = async (i: number): Promise<void> => {
    const client = new Client({ name: 'pincer-bench', version: '1.0.0' });
    clients.push(client);
    const env = { PATH: process.env.PATH ?? '', MEMORY_FILE_PATH: path.join(dir, `memory${i}.jsonl`) };
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [MEMORY], env, stderr: 'ignore' }));
    await client.listTools();
  };
  const started = performance.now();
  try {
    if (how === 'parallel') await Promise.all(Array.from({ length: count }, (_, i) => one(i)));
    else for (let i = 0; i < count; i++) await one(i);
    return performance.now() - started;
  } finally {
    await Promise.all(clients.map((client) => client.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
