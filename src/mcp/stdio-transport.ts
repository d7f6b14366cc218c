import process from 'node:process';
import type { Readable, Writable } from 'node:stream';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { JsonRpcLines, mib, parseMessageLine, type OversizedMessage } from '../shared/jsonrpc-lines.js';

/**
 * The Pincer MCP server's stdio transport: newline-delimited JSON-RPC like the SDK's StdioServerTransport, with one
 * difference. The SDK's transport closes the whole connection when a line outgrows its 10 MiB buffer, so one huge
 * tool argument ended the server with no answer and every later call failed. Here a line over `MAX_MESSAGE_BYTES` is
 * skipped as it streams in (only its first and last few KiB are kept, to find its id), answered with an error naming
 * the limit, and the next line is served as usual.
 */

/** The largest JSON-RPC message the server reads (every tool's valid input is far smaller: texts ≤ 64,000 chars). */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/** The limit as the refusals and the log say it. */
export const LIMIT = `${MAX_MESSAGE_BYTES / (1024 * 1024)} MiB`;

export type { OversizedMessage } from '../shared/jsonrpc-lines.js';
export { mib } from '../shared/jsonrpc-lines.js';

export class LimitedStdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** told of each refused message (for the log). */
  onoversized?: (message: OversizedMessage) => void;

  private readonly lines = new JsonRpcLines(
    MAX_MESSAGE_BYTES,
    (line) => this.onLine(line),
    (message) => this.refuse(message),
  );
  private started = false;

  constructor(
    private readonly stdin: Readable = process.stdin,
    private readonly stdout: Writable = process.stdout,
  ) {}

  async start(): Promise<void> {
    if (this.started) throw new Error('LimitedStdioServerTransport already started');
    this.started = true;
    this.stdin.on('data', this.onData);
    this.stdin.on('error', this.onStreamError);
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.stdout.write(serializeMessage(message))) resolve();
      else this.stdout.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    this.stdin.off('data', this.onData);
    this.stdin.off('error', this.onStreamError);
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.lines.reset();
    this.onclose?.();
  }

  private readonly onStreamError = (error: Error): void => this.onerror?.(error);

  private readonly onData = (chunk: Buffer): void => this.lines.push(chunk);

  private onLine(line: string): void {
    const message = parseMessageLine(line, this.onerror);
    if (!message) return;
    this.onmessage?.(message);
  }

  private refuse(message: OversizedMessage): void {
    this.onoversized?.(message);
    const answer = refusalAnswer(message);
    if (answer) void this.send(answer);
  }
}

/**
 * The answer to a refused request (a notification has no id and gets none): a tool call gets a tool error, anything
 * else a JSON-RPC error. The in-process server of the built-in runtime (linked.ts) answers the same way.
 */
export function refusalAnswer(message: OversizedMessage): JSONRPCMessage | undefined {
  if (message.id === undefined) return undefined;
  const text = refusalText(message);
  return message.method === 'tools/call'
    ? { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text }], isError: true } }
    : { jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidRequest, message: text } };
}

/** The server's log line for a refused message. */
export function refusedLogLine(message: OversizedMessage): string {
  return `refused a ${mib(message.bytes)} message (${[message.method ?? 'unknown method', message.tool].filter(Boolean).join(' ')}): over the ${LIMIT} limit`;
}

function refusalText(message: OversizedMessage): string {
  const what = message.tool ? `the call to ${message.tool}` : `the ${message.method ?? 'unknown'} request`;
  return (
    `${what} is ${mib(message.bytes)}, over the ${LIMIT} limit of one MCP message: ` +
    'pass less (a long text as several messages, or write it to a file and send its path)'
  );
}
