import type Database from 'better-sqlite3';
import type { Tracing } from '../shared/tracing.js';
import type { SessionPaths } from '../db/layout.js';
import type { Logger } from '../shared/log.js';
import type { WakeMode } from '../db/wake.js';

/**
 * What the Pincer MCP server runs with. It is a separate process started by the provider; everything it
 * knows about the conversation comes from the session DB, never from the runner's memory.
 */
export interface McpConfig {
  /** the session folder (PINCER_WORKSPACE, default /workspace). */
  paths: SessionPaths;
  /** the session time zone (TZ): times given without a zone are read in it, times shown are written in it. */
  timeZone: string;
  /** `watch`: a question wakes on any change to the session DB; `poll`: only the fallback interval (bench baseline). */
  wake: WakeMode;
  /** fallback interval of the question wait when no change wakes it (PINCER_POLL_IDLE_MS, default 1000 ms). */
  fallbackMs: number;
  /** the largest file `send_file` copies (PINCER_MAX_FILE_BYTES, default 50 MiB). */
  maxFileBytes: number;
}

/** What every tool handler gets: its own connection to the session DB, the configuration, and a logger. */
export interface ToolContext {
  db: Database.Database;
  config: McpConfig;
  log: Logger;
  /** aborted when the server shuts down (stdin closed, SIGTERM): blocking tools stop waiting. */
  shutdown: AbortSignal;
  /** calls still running that block (questions); the server lets them finish before it closes the DB. */
  blocking: Set<Promise<unknown>>;
  /** tool spans when tracing is on (see traces.ts). */
  tracing?: Tracing;
}

/** A successful tool result: one text block for the model. */
export function textResult(text: string): { content: [{ type: 'text'; text: string }] } {
  return { content: [{ type: 'text', text }] };
}
