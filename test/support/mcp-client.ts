import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type Database from 'better-sqlite3';
import { initRunnerState, readRunnerState, setRunnerBatch } from '../../src/db/state.js';
import type { InboundRow, RoutingContext, RunnerStateName } from '../../src/db/types.js';
import { BUILT_CLI } from './runner-harness.js';
import { isAlive } from './processes.js';
import { waitFor } from './wait.js';

/**
 * The official MCP client connected over stdio to a real `pincer mcp` process (the compiled CLI in dist/). Every
 * client is remembered until closed: `closeAllMcpClients()` in afterEach closes what a test left open and reports it.
 */
export interface McpHandle {
  client: Client;
  /** the server's pid while it runs. */
  pid: number | null;
  /** everything the server wrote to stderr so far. */
  stderr(): string;
  /** call a tool; the result's text blocks joined, and whether it is a tool error. */
  call(name: string, args?: Record<string, unknown>): Promise<ToolOutcome>;
  close(): Promise<void>;
}

export interface ToolOutcome {
  isError: boolean;
  text: string;
}

const open = new Set<McpHandle>();
const started: number[] = [];

/** Start `pincer mcp` (the built CLI) for the session at `workspace`, with `env` added to a minimal environment. */
export async function startMcpClient(
  workspace: string,
  env: Record<string, string> = {},
  /** start it as a provider would from its `mcpServers` entry: exactly this command, args and environment. */
  server?: { command: string; args: string[]; env: Record<string, string> },
): Promise<McpHandle> {
  const transport = new StdioClientTransport({
    command: server?.command ?? process.execPath,
    args: server?.args ?? [BUILT_CLI, 'mcp'],
    env: server?.env ?? { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TZ: 'UTC', PINCER_WORKSPACE: workspace, ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const client = new Client({ name: 'pincer-test', version: '0.0.0' });
  await client.connect(transport);
  if (transport.pid !== null) started.push(transport.pid);
  const handle: McpHandle = {
    client,
    pid: transport.pid,
    stderr: () => stderr,
    call: async (name, args = {}) => toOutcome((await client.callTool({ name, arguments: args })) as CallToolResult),
    close: async () => {
      open.delete(handle);
      await client.close();
    },
  };
  open.add(handle);
  return handle;
}

export function toOutcome(result: CallToolResult): ToolOutcome {
  const text = result.content
    .filter((block): block is { type: 'text'; text: string } => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
  return { isError: result.isError === true, text };
}

/**
 * Close every client a test left open and wait until every server process started so far has exited; returns how
 * many clients were left open (afterEach asserts none).
 */
export async function closeAllMcpClients(): Promise<number> {
  const left = [...open];
  await Promise.all(left.map((handle) => handle.close()));
  await waitFor('every pincer mcp process to exit', () => started.every((pid) => !isAlive(pid)));
  return left.length;
}

/**
 * Make `runner_state` say that a runner has the inbound row `id` in flight, with that row's routing — what the real
 * runner writes when it picks a batch — so tools called now copy it.
 */
export function putBatchInFlight(db: Database.Database, id: string, state: RunnerStateName = 'busy'): RoutingContext {
  const row = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(id) as InboundRow;
  const routing = { platformId: row.platform_id, channelType: row.channel_type, threadId: row.thread_id, inReplyTo: id };
  if (!readRunnerState(db)) initRunnerState(db, process.pid, 'mock');
  setRunnerBatch(db, state, [id], routing);
  return routing;
}

export { isAlive } from './processes.js';
