import type Database from 'better-sqlite3';
import { prepared } from './connection.js';
import { insertInbound } from './messages.js';

/**
 * Limits on what an agent may ask the host to deliver (docs/security.md, "Outbound"). The agent writes `messages_out`
 * itself, so without them 100,000 small rows stall the host's delivery (and its HTTP API) for half a minute, and a
 * few rows of 60 MB each cost the host that much memory and its central DB a WAL of gigabytes. Before the host reads
 * a session's undelivered rows, those over a limit are marked not delivered, in SQL (their content never reaches
 * the host's memory), and the agent is told once per pass with a context row.
 */
export const MAX_OUTBOUND_ROW_BYTES = 1024 * 1024;
/** undelivered rows a session may have at once; the newer ones beyond are refused. */
export const MAX_UNDELIVERED_ROWS = 1000;

const UNDELIVERED = 'delivered_at IS NULL AND delivery_error IS NULL';

/** Mark the rows over the limits not delivered; returns how many. */
export function refuseOutboundOverLimits(db: Database.Database, limits = { rowBytes: MAX_OUTBOUND_ROW_BYTES, undelivered: MAX_UNDELIVERED_ROWS }): number {
  const tooLarge = `not delivered: larger than ${limits.rowBytes} bytes (send a long text as a file)`;
  const tooMany = `not delivered: more than ${limits.undelivered} messages were waiting for delivery at once`;
  // a read first: the usual case (nothing over a limit) takes no write lock away from the runner
  const over = prepared(
    db,
    `SELECT EXISTS (SELECT 1 FROM messages_out WHERE ${UNDELIVERED} AND octet_length(content) > ?)
       OR EXISTS (SELECT 1 FROM messages_out WHERE ${UNDELIVERED} ORDER BY seq LIMIT 1 OFFSET ?) AS over`,
  ).get(limits.rowBytes, limits.undelivered) as { over: number };
  if (!over.over) return 0;
  return db
    .transaction(() => {
      const large = prepared(db, `UPDATE messages_out SET delivery_error = ? WHERE ${UNDELIVERED} AND octet_length(content) > ?`).run(
        tooLarge,
        limits.rowBytes,
      ).changes;
      const cut = prepared(db, `SELECT seq FROM messages_out WHERE ${UNDELIVERED} ORDER BY seq LIMIT 1 OFFSET ?`).get(limits.undelivered) as
        { seq: number } | undefined;
      const many = cut ? prepared(db, `UPDATE messages_out SET delivery_error = ? WHERE ${UNDELIVERED} AND seq >= ?`).run(tooMany, cut.seq).changes : 0;
      if (large + many > 0) {
        const why = [large > 0 ? `${large} larger than ${limits.rowBytes} bytes` : '', many > 0 ? `${many} beyond ${limits.undelivered} waiting at once` : '']
          .filter(Boolean)
          .join(', ');
        insertInbound(db, {
          kind: 'system',
          content: { action: 'deliver_message', status: 'error', error: `${large + many} of your messages were not delivered: ${why}` },
          trigger: 0,
        });
      }
      return large + many;
    })
    .immediate();
}
