import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSessionDb } from '../src/db/connection.js';
import { createSessionFolder } from '../src/db/layout.js';
import { insertInbound } from '../src/db/messages.js';
import { initRunnerState, setRunnerBatch } from '../src/db/state.js';
import { pincerMcpServer } from '../src/mcp/config.js';

/**
 * MCP `send_message` latency: the official MCP client (@modelcontextprotocol/sdk) talks over stdio to a real
 * `pincer mcp` process, started exactly as a provider starts it (`pincerMcpServer`), on a session with a batch in
 * flight (as the runner leaves it in `runner_state` while a query runs). We time call → result: the tool commits its
 * `messages_out` row before it answers, so the result arriving means the row is committed — this is the upper bound
 * of call → commit, and what the agent waits for. Every row is checked afterwards. There is no baseline: a runner
 * without Pincer's tool server has nothing of this kind to compare with.
 */
export interface McpSamples {
  toCommitted: number[];
}

export async function measureMcpSendMessage(calls: number, warmUpCalls = 5): Promise<McpSamples> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-mcp-'));
  const paths = createSessionFolder(root);
  const db = openSessionDb(paths.db);
  const server = pincerMcpServer(root, 'UTC', {});
  const transport = new StdioClientTransport({
    command: server.command,
    args: server.args,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...server.env },
    stderr: 'ignore',
  });
  const client = new Client({ name: 'pincer-bench', version: '0.0.0' });
  const result: McpSamples = { toCommitted: [] };
  try {
    // A batch in flight, so send_message routes to its conversation like it does during a real query.
    const { id } = insertInbound(db, { kind: 'chat', content: { text: 'hi', sender: 'bench' }, platformId: 'bench-chat', channelType: 'bench' });
    initRunnerState(db, process.pid, 'mock');
    setRunnerBatch(db, 'busy', [id], { platformId: 'bench-chat', channelType: 'bench', threadId: null, inReplyTo: id });
    await client.connect(transport);
    for (let i = 0; i < warmUpCalls + calls; i++) {
      const started = performance.now();
      const reply = await client.callTool({ name: 'send_message', arguments: { text: `mcp-${i}` } });
      const elapsed = performance.now() - started;
      if (reply.isError) throw new Error(`send_message failed: ${JSON.stringify(reply.content)}`);
      if (i >= warmUpCalls) result.toCommitted.push(elapsed);
    }
    const rows = (db.prepare('SELECT count(*) AS n FROM messages_out WHERE in_reply_to = ?').get(id) as { n: number }).n;
    if (rows !== warmUpCalls + calls) throw new Error(`expected ${warmUpCalls + calls} messages_out rows, found ${rows}`);
  } finally {
    await client.close();
    db.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
  return result;
}
