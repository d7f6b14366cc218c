/**
 * The host's one error class. Codes and their meaning:
 * - `config`: bad host configuration (flag, environment); the message names the setting.
 * - `unknown-conversation`: an inbound message for a conversation with no binding and no default agent group.
 * - `unknown-group`: an agent group id or name that the central DB does not hold.
 * - `invalid-input`: a request or action whose input failed validation; the message names the field.
 * - `not-found`: a question, session or file that does not exist.
 * - `delivery`: a channel could not deliver a message (retried by delivery, then recorded as `delivery_error`).
 * - `quarantined`: the conversation's session folder is unsafe to open (a linked or unreadable session.db); the host
 *   leaves it alone until an administrator moves it aside.
 * - `over-budget`: the agent group has reached a budget; the message says which limit and when it resets.
 * - `not-ready`: retryable: the agent group has no model-runtime generation to serve (its build failed, the message
 *   says why); asking again changes nothing until its configuration or the credentials change.
 */
export type HostErrorCode = 'config' | 'unknown-conversation' | 'unknown-group' | 'invalid-input' | 'not-found' | 'delivery' | 'quarantined' | 'over-budget' | 'not-ready';

export class HostError extends Error {
  constructor(
    readonly code: HostErrorCode,
    message: string,
    /** for `invalid-input`: the field that is wrong, when one is. */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'HostError';
  }
}

export function isHostError(err: unknown, code?: HostErrorCode): err is HostError {
  return err instanceof HostError && (code === undefined || err.code === code);
}

/** What a client is told when a message cannot be stored because the host's disk is full (HTTP 507, Retry-After). */
export const DISK_FULL_MESSAGE = "the host's disk is full; the message was not stored";

/** What a chat (a platform thread, the terminal) is told instead of silence when its message met a full disk. */
export const DISK_FULL_NOTICE = "Your message was not stored: the host's disk is full. Please send it again later.";

/** Seconds a client should wait before it sends again after a full disk. */
export const DISK_FULL_RETRY_AFTER_S = 30;

/** Whether `err` is a write that failed for want of space: SQLite's SQLITE_FULL (better-sqlite3) or ENOSPC. */
export function isDiskFull(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null && 'code' in err ? (err as { code: unknown }).code : undefined;
  return code === 'SQLITE_FULL' || code === 'ENOSPC';
}
