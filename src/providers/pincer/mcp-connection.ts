import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { errorMessage, type Logger } from '../../shared/log.js';

/**
 * One MCP server as the built-in runtime's client keeps it: started once, each tool call with its own timeout and its
 * own abort listener (the turn's signal gets one listener per call, removed when the call ends, never a pile), and,
 * when the connection drops, started again for the next call with back-off (the call that saw the drop fails with a
 * tool error saying so). A failure is always a thrown Error with a message for the model; nothing here ends the turn.
 */

/** What opening a connection gives: the transport, and what the server wrote on stderr (for messages). */
export interface OpenedTransport {
  transport: Transport;
  /** the server's first stderr lines so far (a live array), if it has one */
  stderr?: readonly string[];
  /** the last line it wrote on stderr (why it stopped, usually) */
  lastStderr?: () => string | undefined;
  /** after the client has closed: release what the transport does not (Pincer's in-process server) */
  release?: () => Promise<void>;
}

/** What starting within a deadline came to: the tools, or why not (and, when only late, the start still going on). */
export type StartOutcome =
  { up: true; tools: Tool[] } | { up: false; late: true; stderr: string | undefined; later: Promise<Tool[]> } | { up: false; late: false; error: string };

/** Restart back-off after a dropped connection: immediately, then 1 s, 2 s, 4 s … at most 60 s. */
const BACKOFF_MS = [0, 1000, 2000, 4000, 8000, 16_000, 32_000, 60_000];

export class McpServerConnection {
  private client: Client | undefined;
  private opened: OpenedTransport | undefined;
  private connecting: Promise<Tool[]> | undefined;
  private closing = false;
  private drops = 0;
  private droppedAt = 0;
  private lastStderr: readonly string[] = [];
  private lastLine: string | undefined;

  constructor(
    readonly name: string,
    private readonly open: () => Promise<OpenedTransport>,
    private readonly log: Logger,
    /** how long a call to `tool` may take */
    private readonly callTimeoutMs: (tool: string) => number,
  ) {}

  /** Connect and list the tools. Rejects with the reason (and the server's first stderr line, when it wrote one). */
  start(): Promise<Tool[]> {
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  /**
   * Start, waiting at most `deadlineMs` (the built-in runtime's turn and `pincer doctor` alike): a server not up by
   * then is `late`, with the first line of its stderr so far and the start that goes on (`later`). Never rejects.
   */
  async startWithin(deadlineMs: number): Promise<StartOutcome> {
    const up = this.start();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), deadlineMs);
    });
    try {
      const outcome = await Promise.race([up, late]);
      if (outcome !== 'late') return { up: true, tools: outcome };
      return { up: false, late: true, stderr: this.firstStderrLine(), later: up };
    } catch (err) {
      return { up: false, late: false, error: errorMessage(err) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** The server's first stderr line (of the current or last process), for notices. */
  firstStderrLine(): string | undefined {
    return (this.opened?.stderr ?? this.lastStderr)[0];
  }

  /** Its last stderr line (of the current or last process): what it said as it stopped. */
  lastStderrLine(): string | undefined {
    return this.opened?.lastStderr?.() ?? this.lastLine;
  }

  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal | undefined): Promise<CallToolResult> {
    const client = this.client ?? (await this.restart());
    const timeoutMs = this.callTimeoutMs(tool);
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return (await client.callTool({ name: tool, arguments: args }, undefined, { signal: controller.signal, timeout: timeoutMs })) as CallToolResult;
    } catch (err) {
      throw this.explain(tool, err, timeoutMs, client, controller.signal.aborted);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    // A server still starting (or hanging at start) is ended now, not after the SDK's own request timeout.
    if (this.connecting) await this.opened?.transport.close().catch(() => undefined); // closing a transport that failed to open: nothing to report
    await this.connecting?.catch(() => undefined); // the connection attempt reported its own failure
    await this.disconnect();
  }

  private async connect(): Promise<Tool[]> {
    const opened = await this.open();
    const client = new Client({ name: 'pincer-builtin', version: '1.0.0' });
    this.opened = opened;
    try {
      await client.connect(opened.transport);
      const listed = await client.listTools();
      if (this.closing) throw new Error('closed while starting');
      client.onclose = () => this.dropped(client);
      this.client = client;
      return listed.tools;
    } catch (err) {
      const stderr = opened.stderr?.[0];
      await client.close().catch(() => undefined); // closing at the end: a server already gone is fine
      await opened.release?.().catch(() => undefined); // releasing at the end: a server already gone is fine
      this.forget(opened);
      throw new Error(`${startFailure(err)}${stderr ? ` (its stderr: "${stderr}")` : ''}`);
    }
  }

  private dropped(client: Client): void {
    if (this.client !== client || this.closing) return;
    this.client = undefined;
    this.drops += 1;
    this.droppedAt = Date.now();
    const opened = this.opened;
    if (opened) {
      void opened.release?.().catch(() => undefined); // releasing a dropped connection: it is gone already
      this.forget(opened);
    }
    const said = this.lastStderrLine();
    this.log.warn(`MCP server ${this.name}: connection closed${said ? ` (its last stderr line: ${said})` : ''}; it is restarted for the next call`);
  }

  /** After a drop: start again, once the back-off since the last drop is over. */
  private async restart(): Promise<Client> {
    if (this.closing) throw new Error(`the MCP server ${this.name} is shutting down`);
    const wait = BACKOFF_MS[Math.min(this.drops - 1, BACKOFF_MS.length - 1)] ?? 0;
    const left = this.droppedAt + wait - Date.now();
    if (left > 0) {
      throw new Error(
        `the MCP server ${this.name} stopped ${this.drops} times and is restarted in ${Math.ceil(left / 1000)} s; try again then or do without it`,
      );
    }
    try {
      await this.start();
    } catch (err) {
      this.droppedAt = Date.now();
      this.drops += 1;
      throw new Error(`the MCP server ${this.name} stopped and could not be restarted: ${errorMessage(err)}`);
    }
    this.log.info(`MCP server ${this.name}: restarted`);
    return this.client!;
  }

  private explain(tool: string, err: unknown, timeoutMs: number, client: Client, aborted = false): Error {
    if (aborted) return new Error(`${this.name} ${tool} was aborted (the turn stopped): ${errorMessage(err)}`);
    if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
      return new Error(`${this.name} ${tool} did not answer within ${seconds(timeoutMs)} and was cancelled`);
    }
    if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) {
      if (this.client === client) this.dropped(client);
      const said = this.lastStderrLine();
      return new Error(
        `the MCP server ${this.name} stopped during the call to ${tool}${said ? ` (its last stderr line: "${said}")` : ''}; it is restarted for the next call`,
      );
    }
    return new Error(`${this.name} ${tool} failed: ${errorMessage(err)}`);
  }

  private forget(opened: OpenedTransport): void {
    if (this.opened !== opened) return;
    this.lastStderr = [...(opened.stderr ?? [])];
    this.lastLine = opened.lastStderr?.();
    this.opened = undefined;
  }

  private async disconnect(): Promise<void> {
    const client = this.client;
    const opened = this.opened;
    this.client = undefined;
    if (opened) this.forget(opened);
    try {
      await client?.close();
      await opened?.release?.();
    } catch (err) {
      this.log.warn(`closing MCP server ${this.name}: ${errorMessage(err)}`);
    }
  }
}

function startFailure(err: unknown): string {
  if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed) return 'it exited before it was ready';
  const code = (err as { code?: unknown }).code;
  if (code === 'ENOENT') return `command not found (${errorMessage(err)})`;
  return errorMessage(err);
}

export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
