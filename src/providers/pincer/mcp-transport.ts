import { spawn, type ChildProcess } from 'node:child_process';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { JsonRpcLines, mib, parseMessageLine, type OversizedMessage } from '../../shared/jsonrpc-lines.js';
import type { McpStdioServerConfig } from '../types.js';

/**
 * The built-in runtime's stdio transport to a user's MCP server: a child process in its own process group (a server
 * started through `npx` or `sh` is several processes, all stopped together) speaking newline-delimited JSON-RPC.
 * Unlike the SDK's StdioClientTransport, a message over `maxBytes` does not close the connection: it is skipped and
 * its request answered here with an error naming the limit (a tool error for a tool call), and the server goes on
 * serving. The server's stderr is kept (its first lines, for a start failure's notice) and passed to `onStderr`.
 */

/** stderr lines kept for the notice of a failed start. */
const KEPT_STDERR_LINES = 20;
const STOP_WAIT_MS = 2000;

export class LimitedStdioClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  /** the first lines the server wrote on stderr */
  readonly stderrLines: string[] = [];
  /** the last line it wrote there */
  lastStderrLine: string | undefined;
  /** how the process ended, once it has */
  exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  private child: ChildProcess | undefined;
  private readonly lines: JsonRpcLines;
  /** method of each request in flight, to answer one whose response was too big in the right form */
  private readonly requests = new Map<RequestId, string>();
  private stderrRest = '';
  private closed = false;

  constructor(
    private readonly server: McpStdioServerConfig,
    private readonly maxBytes: number,
    private readonly onStderr: (line: string) => void,
  ) {
    this.lines = new JsonRpcLines(
      maxBytes,
      (line) => this.onLine(line),
      (message) => this.onOversized(message),
    );
  }

  start(): Promise<void> {
    if (this.child) throw new Error('LimitedStdioClientTransport already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.server.command, this.server.args, {
        env: this.server.env,
        cwd: this.server.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
      this.child = child;
      child.once('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once('spawn', () => resolve());
      child.once('close', (code, signal) => {
        this.exit = { code, signal };
        this.finish();
      });
      child.stdout!.on('data', (chunk: Buffer) => this.lines.push(chunk));
      child.stderr!.on('data', (chunk: Buffer) => this.takeStderr(chunk));
      // A write to a server that has just exited: its close event follows and ends the connection.
      child.stdin!.on('error', (error) => this.onerror?.(error));
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  send(message: JSONRPCMessage): Promise<void> {
    const child = this.child;
    if (!child?.stdin?.writable || this.closed) return Promise.reject(new Error('Not connected'));
    if ('method' in message && 'id' in message) this.requests.set(message.id, message.method);
    return new Promise((resolve) => {
      if (child.stdin!.write(serializeMessage(message))) resolve();
      else child.stdin!.once('drain', resolve);
    });
  }

  /** End the server: close its stdin, then SIGTERM its process group, then SIGKILL. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || this.exit) return this.finish();
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const wait = (): Promise<boolean> =>
      Promise.race([exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), STOP_WAIT_MS).unref())]);
    child.stdin?.end();
    if (!(await wait())) {
      signalGroup(child, 'SIGTERM');
      if (!(await wait())) signalGroup(child, 'SIGKILL');
    }
    this.finish();
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.lines.reset();
    this.requests.clear();
    if (this.stderrRest.trim()) this.keepStderr(this.stderrRest);
    this.stderrRest = '';
    this.onclose?.();
  }

  private onLine(line: string): void {
    const message = parseMessageLine(line, this.onerror);
    if (!message) return;
    if (('result' in message || 'error' in message) && 'id' in message && message.id !== undefined) this.requests.delete(message.id);
    this.onmessage?.(message);
  }

  private onOversized(message: OversizedMessage): void {
    const method = message.id === undefined ? undefined : this.requests.get(message.id);
    this.onerror?.(new Error(`skipped a ${mib(message.bytes)} message from the server (over the ${mib(this.maxBytes)} limit)`));
    if (message.id === undefined || method === undefined) return;
    this.requests.delete(message.id);
    const text = `the result is ${mib(message.bytes)}, over the ${mib(this.maxBytes)} limit of one MCP message; ask for less (a smaller range, a page, a summary)`;
    this.onmessage?.(
      method === 'tools/call'
        ? { jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text }], isError: true } }
        : { jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InternalError, message: text } },
    );
  }

  private takeStderr(chunk: Buffer): void {
    const text = this.stderrRest + chunk.toString('utf8');
    const parts = text.split('\n');
    this.stderrRest = parts.pop() ?? '';
    // A server that writes one endless line is cut, not buffered.
    if (this.stderrRest.length > 4096) {
      parts.push(this.stderrRest.slice(0, 4096));
      this.stderrRest = '';
    }
    for (const line of parts) if (line.trim()) this.keepStderr(line);
  }

  private keepStderr(line: string): void {
    const trimmed = line.replace(/\r$/, '').slice(0, 1000);
    if (this.stderrLines.length < KEPT_STDERR_LINES) this.stderrLines.push(trimmed);
    this.lastStderrLine = trimmed;
    this.onStderr(trimmed);
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // the group is gone already; the child itself may linger as a zombie until its close event
    child.kill(signal);
  }
}
