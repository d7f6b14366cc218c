import type { TransferListItem } from 'node:worker_threads';

/**
 * A task result whose buffers move to the main thread instead of being copied: big results (an 11 MB base64
 * string) cost the main thread tens of milliseconds to deserialise, a transferred ArrayBuffer almost nothing.
 */
const TRANSFER = '__pincerTransfer';

export interface TransferredResult<T> {
  [TRANSFER]: true;
  value: T;
  transfer: TransferListItem[];
}

/** Return this from a task handler to transfer `transfer` along with `value`; the caller receives `value`. */
export function withTransfer<T>(value: T, transfer: TransferListItem[]): T {
  const wrapped: TransferredResult<T> = { [TRANSFER]: true, value, transfer };
  // The pool unwraps it before the caller sees it, so callers are typed on `value`.
  return wrapped as unknown as T;
}

export function isTransferredResult(value: unknown): value is TransferredResult<unknown> {
  return typeof value === 'object' && value !== null && (value as Record<string, unknown>)[TRANSFER] === true;
}
