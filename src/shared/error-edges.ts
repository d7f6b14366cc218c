import { ERROR_CODES, isPincerError, type ErrorCode } from './errors.js';
import { errorMessage } from './log.js';

/**
 * Each edge's translation of an error, all read from `ERROR_CODES`: an HTTP response, an MCP tool result's text, the
 * CLI's one line and exit code, a chat notice. Anything that is not a `PincerError` is `internal` at every edge: its
 * detail goes to the log, never to a client.
 */

export interface HttpErrorReply {
  status: number;
  body: { error: string; code: ErrorCode; field?: string };
  headers: Record<string, string>;
}

/** The HTTP reply for an error: its status, `{error, code, field?}`, and `Retry-After` when one is known. */
export function httpReply(err: unknown): HttpErrorReply {
  if (!isPincerError(err)) return { status: 500, body: { error: 'internal error', code: 'internal' }, headers: {} };
  return {
    status: ERROR_CODES[err.code].http,
    body: { error: err.message, code: err.code, ...(err.field ? { field: err.field } : {}) },
    headers: err.retryAfterS === undefined ? {} : { 'Retry-After': String(err.retryAfterS) },
  };
}

/**
 * The text of an MCP tool error result: a `PincerError`'s message, which is written for the model (what went wrong,
 * what to do instead); anything else is an internal error, named by its first line.
 */
export function toolErrorText(err: unknown): string {
  return isPincerError(err) ? err.message : `internal error: ${errorMessage(err).split('\n')[0]}`;
}

/** The CLI's report: one line on stderr and the exit code. */
export function cliReport(err: unknown, hint: string): { line: string; exit: number } {
  if (!isPincerError(err)) return { line: `pincer: internal error: ${errorMessage(err).split('\n')[0]}`, exit: ERROR_CODES.internal.exit };
  return { line: `pincer: ${err.message} (${hint})`, exit: ERROR_CODES[err.code].exit };
}

/** A notice for the chat a failure concerns: the message, and what the user can do about it. */
export function chatNotice(err: unknown): string {
  const code = isPincerError(err) ? err.code : 'internal';
  const text = ERROR_CODES[code].notice.replace('{message}', () => (err as Error).message);
  return ERROR_CODES[code].retry ? `${text} Please send it again later.` : text;
}
