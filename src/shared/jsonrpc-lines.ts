import { deserializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';

/**
 * Newline-delimited JSON-RPC as MCP's stdio transport carries it, split into lines with a size limit that never ends
 * the stream: a line over `maxBytes` is skipped as it streams in (only its first and last few KiB are kept, to find its
 * method, tool and id) and reported, and the next line is read as usual. The SDK's own reader instead drops the whole
 * connection when its 10 MiB buffer overflows. Used by Pincer's server (src/mcp/stdio-transport.ts) and by the
 * built-in runtime's client of the user's servers.
 */

/** What is learnt of a line refused for its size. */
export interface OversizedMessage {
  bytes: number;
  method: string | undefined;
  tool: string | undefined;
  id: RequestId | undefined;
}

/** How much of the start and end of an oversized line is kept. */
const KEEP_BYTES = 4096;

export class JsonRpcLines {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private oversized: { bytes: number; head: Buffer; tail: Buffer } | undefined;

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOversized: (message: OversizedMessage) => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      this.take(newline === -1 ? chunk.subarray(start) : chunk.subarray(start, newline));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  }

  reset(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.oversized = undefined;
  }

  /** Add part of the current line: kept whole up to the limit, beyond it only its start and its last bytes. */
  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.oversized) {
      this.oversized.bytes += piece.length;
      this.oversized.tail = lastBytes(Buffer.concat([this.oversized.tail, piece]));
      return;
    }
    if (this.pendingBytes + piece.length <= this.maxBytes) {
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
    this.reset();
    if (oversized) {
      this.onOversized(describeOversized(oversized.bytes, oversized.head.toString('utf8'), oversized.tail.toString('utf8')));
      return;
    }
    if (line && line.trim() !== '') this.onLine(line);
  }
}

/** `2.0 MiB` */
export function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

function lastBytes(buffer: Buffer): Buffer {
  return buffer.length <= KEEP_BYTES ? buffer : Buffer.from(buffer.subarray(buffer.length - KEEP_BYTES));
}

const ID = String.raw`(-?\d{1,20}|"(?:[^"\\]|\\.){0,200}")`;
/** `…,"id":7}` at the very end of the line: the outer object's last member (the SDK writes the id last). */
const ID_AT_END = new RegExp(String.raw`"id"\s*:\s*${ID}\s*\}\s*$`);
/** `{"jsonrpc":"2.0","id":7,…` — the id among the first simple members (other implementations write it first). */
const ID_AT_START = new RegExp(String.raw`^\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]{0,100}"\s*,)*\s*"id"\s*:\s*${ID}`);
const METHOD = /"method"\s*:\s*"([^"\\]{1,100})"/;
const TOOL = /"params"\s*:\s*\{\s*"name"\s*:\s*"([A-Za-z0-9_.:-]{1,128})"/;

/**
 * Method, tool and id of a line too big to parse, from its start and end. Structure, not content: a string inside the
 * message cannot end the line with `"id":7}`, since its quotes are escaped and the line's last brace closes the message.
 */
function describeOversized(bytes: number, head: string, tail: string): OversizedMessage {
  const idText = ID_AT_END.exec(tail)?.[1] ?? ID_AT_START.exec(head)?.[1];
  let id: RequestId | undefined;
  try {
    id = idText === undefined ? undefined : (JSON.parse(idText) as RequestId);
  } catch {
    // an id that is not JSON: the reply goes without one
    id = undefined;
  }
  const method = METHOD.exec(head)?.[1] ?? METHOD.exec(tail)?.[1];
  const tool = method === 'tools/call' ? TOOL.exec(head)?.[1] : undefined;
  return { bytes, method, tool, id };
}

/** One line as a JSON-RPC message. Like the SDK's transports, a line that is not one is reported to `onerror` and skipped. */
export function parseMessageLine(line: string, onerror: ((error: Error) => void) | undefined): JSONRPCMessage | undefined {
  try {
    return deserializeMessage(line);
  } catch (error) {
    onerror?.(error instanceof Error ? error : new Error(String(error)));
    return undefined;
  }
}
