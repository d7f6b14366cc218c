import process from 'node:process';
import type { Readable, Writable } from 'node:stream';
import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';

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

/** How much of the start and end of an oversized line is kept to find its method, tool name and id. */
const KEEP_BYTES = 4096;

/** What the server learns of a message it refused for its size. */
export interface OversizedMessage {
  bytes: number;
  method: string | undefined;
  tool: string | undefined;
  id: RequestId | undefined;
}

export class LimitedStdioServerTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** told of each refused message (for the log). */
  onoversized?: (message: OversizedMessage) => void;

  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private oversized: { bytes: number; head: Buffer; tail: Buffer } | undefined;
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
    this.pending = [];
    this.oversized = undefined;
    this.onclose?.();
  }

  private readonly onStreamError = (error: Error): void => this.onerror?.(error);

  private readonly onData = (chunk: Buffer): void => {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      this.take(newline === -1 ? chunk.subarray(start) : chunk.subarray(start, newline));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  };

  /** Add part of the current line: kept whole up to the limit, beyond it only its start and its last bytes. */
  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.oversized) {
      this.oversized.bytes += piece.length;
      this.oversized.tail = lastBytes(Buffer.concat([this.oversized.tail, piece]));
      return;
    }
    if (this.pendingBytes + piece.length <= MAX_MESSAGE_BYTES) {
      this.pending.push(piece);
      this.pendingBytes += piece.length;
      return;
    }
    const sofar = Buffer.concat([...this.pending, piece]);
    this.oversized = { bytes: sofar.length, head: Buffer.from(sofar.subarray(0, KEEP_BYTES)), tail: lastBytes(sofar) };
    this.pending = [];
    this.pendingBytes = 0;
  }

  private endLine(): void {
    const oversized = this.oversized;
    const line = oversized ? undefined : Buffer.concat(this.pending).toString('utf8').replace(/\r$/, '');
    this.oversized = undefined;
    this.pending = [];
    this.pendingBytes = 0;
    if (oversized) {
      this.refuse(describeOversized(oversized.bytes, oversized.head.toString('utf8'), oversized.tail.toString('utf8')));
      return;
    }
    if (!line || line.trim() === '') return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line);
    } catch (error) {
      // Like the SDK: a line that is not a JSON-RPC message is reported and skipped.
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
      return;
    }
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

/** `2.0 MiB` */
export function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

function refusalText(message: OversizedMessage): string {
  const what = message.tool ? `the call to ${message.tool}` : `the ${message.method ?? 'unknown'} request`;
  return (
    `${what} is ${mib(message.bytes)}, over the ${LIMIT} limit of one MCP message: ` +
    'pass less (a long text as several messages, or write it to a file and send its path)'
  );
}

function lastBytes(buffer: Buffer): Buffer {
  return buffer.length <= KEEP_BYTES ? buffer : Buffer.from(buffer.subarray(buffer.length - KEEP_BYTES));
}

const ID = String.raw`(-?\d{1,20}|"(?:[^"\\]|\\.){0,200}")`;
/** `…,"id":7}` at the very end of the line: the outer object's last member (the SDK client writes the id last). */
const ID_AT_END = new RegExp(String.raw`"id"\s*:\s*${ID}\s*\}\s*$`);
/** `{"jsonrpc":"2.0","id":7,…` — the id among the first simple members (other clients write it first). */
const ID_AT_START = new RegExp(String.raw`^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,100}"\s*,)*\s*"id"\s*:\s*${ID}`);
const METHOD = /"method"\s*:\s*"([^"\\]{1,100})"/;
const TOOL = /"params"\s*:\s*\{\s*"name"\s*:\s*"([A-Za-z0-9_.:-]{1,128})"/;

/**
 * Method, tool and id of a line too big to parse, from its start and end. Structure, not content: a string argument
 * cannot end the line with `"id":7}`, since its quotes are escaped and the line's last brace closes the message.
 */
function describeOversized(bytes: number, head: string, tail: string): OversizedMessage {
  const idText = ID_AT_END.exec(tail)?.[1] ?? ID_AT_START.exec(head)?.[1];
  let id: RequestId | undefined;
  try {
    id = idText === undefined ? undefined : (JSON.parse(idText) as RequestId);
  } catch {
    id = undefined;
  }
  const method = METHOD.exec(head)?.[1] ?? METHOD.exec(tail)?.[1];
  const tool = method === 'tools/call' ? TOOL.exec(head)?.[1] : undefined;
  return { bytes, method, tool, id };
}
