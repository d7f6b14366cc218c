import { chatNotice } from '../shared/error-edges.js';
import { isPincerError, PincerError } from '../shared/errors.js';

/** What a client is told when a message cannot be stored because the host's disk is full (HTTP 507, Retry-After). */
export const DISK_FULL_MESSAGE = "the host's disk is full; the message was not stored";

/** What a chat (a platform thread, the terminal) is told instead of silence when its message met a full disk. */
export const DISK_FULL_NOTICE = chatNotice(new PincerError('disk-full', "Your message was not stored: the host's disk is full."));

/** Seconds a client should wait before it sends again after a full disk. */
export const DISK_FULL_RETRY_AFTER_S = 30;

/** Whether `err` is a write that failed for want of space: SQLite's SQLITE_FULL (better-sqlite3) or ENOSPC. */
export function isDiskFull(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null && 'code' in err ? (err as { code: unknown }).code : undefined;
  return code === 'SQLITE_FULL' || code === 'ENOSPC';
}

/**
 * What a chat is told when its message could not be stored (its sender would otherwise hear nothing): undefined for a
 * refusal the host already told the conversation about (over budget).
 */
export function failedMessageNotice(err: unknown): string | undefined {
  if (isDiskFull(err)) return DISK_FULL_NOTICE;
  if (isPincerError(err, 'over-budget')) return undefined;
  return chatNotice(err);
}
