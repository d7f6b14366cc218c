/**
 * Short, greppable log lines on stderr, each with its time (UTC, milliseconds) first:
 * `2026-11-30T21:40:01.123Z [runner] picked 3 messages (chat×2, task×1) in 2 ms`.
 * stdout stays free for command output (JSON lines, MCP stdio).
 */
import fs from 'node:fs';
import { settingOrDefault } from './settings-load.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** PINCER_LOG_LEVEL of this process, read here only (any case; an unknown level is `info`). */
export function logLevel(): LogLevel {
  return settingOrDefault(process.env, 'PINCER_LOG_LEVEL');
}

/** PINCER_LOG_LEVEL=debug: stack traces, source maps, per-task diagnostics. */
export function isDebugLogging(): boolean {
  return logLevel() === 'debug';
}

function thresholdFromEnv(): number {
  return ORDER[logLevel()];
}

/**
 * Where loggers made without a writer of their own send their lines: stderr, unless a command moves them (`pincer
 * chat` keeps the terminal for the conversation and writes them to a file). Looked up per line, so loggers made at
 * module load follow the move.
 */
let sink: (line: string) => void = writeStderr;
export function setLogSink(write: (line: string) => void): void {
  sink = write;
}

/** Values never written to a log (the host's tokens and keys): replaced by `[redacted]` in every line. */
const redacted = new Set<string>();
/** Keep `values` out of every log line of this process from now on (values under 8 characters are not secrets). */
export function redactInLogs(values: Iterable<string | undefined>): void {
  for (const value of values) if (value !== undefined && value.length >= 8) redacted.add(value);
}
function redact(line: string): string {
  for (const value of redacted) if (line.includes(value)) line = line.split(value).join('[redacted]');
  return line;
}

/** A logger whose lines start with the time and `[area]`; the level comes from PINCER_LOG_LEVEL (default info). */
export function createLogger(area: string, write: (line: string) => void = (line) => sink(line)): Logger {
  const threshold = thresholdFromEnv();
  const emit = (level: LogLevel, message: string): void => {
    if (ORDER[level] < threshold) return;
    const prefix = level === 'info' || level === 'debug' ? `[${area}]` : `[${area}] ${level}:`;
    write(`${new Date().toISOString()} ${prefix} ${redacted.size > 0 ? redact(message) : message}\n`);
  };
  return {
    debug: (m) => emit('debug', m),
    info: (m) => emit('info', m),
    warn: (m) => emit('warn', m),
    error: (m) => emit('error', m),
  };
}

/**
 * A log line to stderr that can never take the process down: when stderr is a file on a full disk (or a closed
 * pipe), the line is lost, not the host.
 */
let stderrGuarded = false;
/** whether lines go to fd 2 directly (false once that failed, e.g. EAGAIN on a non-blocking pipe). */
let direct = true;
function writeStderr(line: string): void {
  // Straight to the file descriptor: creating `process.stderr` loads a stream (and, for a pipe, node:net) that a
  // runner's start-up has no other use for; writes to a file or a pipe on Linux are synchronous either way.
  if (direct) {
    try {
      const bytes = Buffer.from(line);
      const written = fs.writeSync(2, bytes);
      if (written === bytes.length) return;
      line = bytes.subarray(written).toString(); // a non-blocking pipe took part of it: the stream writes the rest
    } catch {
      // EAGAIN on a non-blocking pipe, or a closed descriptor: the stream below decides
    }
    direct = false;
  }
  if (!stderrGuarded) {
    stderrGuarded = true;
    process.stderr.on('error', () => undefined);
  }
  try {
    process.stderr.write(line);
  } catch {
    // nowhere left to report it
  }
}

/** A writer that appends lines to `file` (owner-only); a line that cannot be written is dropped, never the process. */
export function fileSink(file: string): (line: string) => void {
  return (line) => {
    try {
      fs.appendFileSync(file, line, { mode: 0o600 });
    } catch {
      // a full disk or a removed folder: nowhere left to report it
    }
  };
}

/** The message of anything thrown, for logs and `last_error`. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return typeof err === 'string' ? err : JSON.stringify(err);
}
