import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { prepared } from '../../../db/connection.js';

/**
 * Replays of signed webhooks (docs/security.md, "Webhooks"): a signature proves who made a body, not that it is new,
 * so anyone who saw one delivery could post it again for ever, and relabel it with another event name. Every accepted
 * delivery is kept by the digest of the bytes that were signed (the body; Stripe signs `<t>.<body>`, whose body
 * carries the event id). The delivery-id headers (`X-GitHub-Delivery`, a generic sender's nonce) are not signed, so
 * they are logged but never trusted: a replay with a fresh id is the same body. Kept `KEEP_DAYS`; older ones pruned.
 */
export const KEEP_DAYS = 90;

export interface Claim {
  /** true: first time; the caller stores the message and then `settle`s it. */
  fresh: boolean;
  /** the message an earlier delivery of these bytes became (for the duplicate's answer). */
  earlier: string | null;
}

export class WebhookReplays {
  constructor(private readonly db: Database.Database) {}

  static digestOf(body: Buffer): string {
    return createHash('sha256').update(body).digest('hex');
  }

  /** Claim a delivery atomically: a second request with the same bytes, even at the same moment, is not fresh. */
  claim(hook: string, body: Buffer, deliveryId: string | undefined, now = Date.now()): Claim & { digest: string } {
    const digest = WebhookReplays.digestOf(body);
    const inserted = prepared(this.db, 'INSERT OR IGNORE INTO webhook_deliveries (hook, digest, delivery_id, received_at) VALUES (?, ?, ?, ?)').run(
      hook,
      digest,
      deliveryId?.slice(0, 200) ?? null,
      new Date(now).toISOString(),
    );
    if (inserted.changes === 1) {
      prepared(this.db, 'DELETE FROM webhook_deliveries WHERE received_at < ?').run(new Date(now - KEEP_DAYS * 86_400_000).toISOString());
      return { fresh: true, earlier: null, digest };
    }
    const row = prepared(this.db, 'SELECT message_id FROM webhook_deliveries WHERE hook = ? AND digest = ?').get(hook, digest) as
      { message_id: string | null } | undefined;
    return { fresh: false, earlier: row?.message_id ?? null, digest };
  }

  /** The message a fresh delivery became. */
  settle(hook: string, digest: string, messageId: string): void {
    prepared(this.db, 'UPDATE webhook_deliveries SET message_id = ? WHERE hook = ? AND digest = ?').run(messageId, hook, digest);
  }

  /** The delivery could not be stored: a retry of it is fresh. */
  release(hook: string, digest: string): void {
    prepared(this.db, 'DELETE FROM webhook_deliveries WHERE hook = ? AND digest = ?').run(hook, digest);
  }
}
