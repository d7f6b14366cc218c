import type Database from 'better-sqlite3';
import { readRunnerState } from '../db/state.js';
import type { RoutingContext } from '../db/types.js';
import { PincerError } from '../shared/errors.js';

/**
 * Routing of rows written by tools. The MCP server is a separate process, so the routing of the batch in
 * flight is read from `runner_state` on every call — never kept in module state, which would go stale the moment the
 * runner picks the next batch. With no batch in flight (no runner, or between batches) every field is null and the
 * host delivers to the session's own conversation.
 */
export const NO_ROUTING: RoutingContext = Object.freeze({ platformId: null, channelType: null, threadId: null, inReplyTo: null });

export function batchRouting(db: Database.Database): RoutingContext {
  return readRunnerState(db)?.routing ?? NO_ROUTING;
}

/** An explicit destination a tool was given (`send_message`'s channel, platformId, threadId). */
export interface Destination {
  channel?: string | undefined;
  platformId?: string | undefined;
  threadId?: string | undefined;
}

/**
 * The routing of one row: the batch's, with an explicit destination overriding it. The fields narrow from channel to
 * platform to thread, so a given field replaces itself and everything narrower: a new channel needs its own platformId
 * (and takes no thread from the batch), a new platformId keeps the batch's channel but not its thread, a threadId alone
 * is another thread of the same conversation. `inReplyTo` always stays the batch's: it records what the agent was
 * answering, whichever chat the row goes to.
 */
export function resolveRouting(db: Database.Database, destination: Destination = {}): RoutingContext {
  const batch = batchRouting(db);
  const { channel, platformId, threadId } = destination;
  if (channel === undefined && platformId === undefined && threadId === undefined) return batch;
  if (channel !== undefined) {
    if (platformId === undefined) {
      throw new PincerError('invalid-input', `channel "${channel}" needs platformId too: which chat on that channel?`);
    }
    return { channelType: channel, platformId, threadId: threadId ?? null, inReplyTo: batch.inReplyTo };
  }
  if (batch.channelType === null) {
    throw new PincerError('invalid-input', 'no conversation is in flight to take the channel from: give channel and platformId as well');
  }
  if (platformId !== undefined) return { ...batch, platformId, threadId: threadId ?? null };
  return { ...batch, threadId: threadId ?? null };
}

/**
 * A row for a conversation the host did not list in `destinations` is refused here with a tool error, so the agent
 * hears why at once; the host refuses it on delivery anyway (docs/security.md, "Outbound").
 */
export function refuseUnlistedDestination(destinations: readonly { channelType: string; platformId: string }[] | undefined, routing: RoutingContext): void {
  if (!destinations || routing.channelType === null || routing.platformId === null) return;
  if (destinations.some((d) => d.channelType === routing.channelType && d.platformId === routing.platformId)) return;
  const listed = destinations.map((d) => `${d.channelType}:${d.platformId}`).join(', ');
  throw new PincerError('invalid-input', `you may send only to ${listed}; ${routing.channelType}:${routing.platformId} is not one of them`);
}
