import type { CentralStore } from './central-db/store.js';
import type { SessionRecord } from './central-db/types.js';
import type { ConversationRef } from './types.js';

/**
 * Where a session's agent may send (docs/security.md, "Outbound"): its own conversation (any thread of it) and the
 * conversations bound to its agent group by an administrator. The default group's bindings do not count: the host
 * makes one for every conversation that reaches it, so they would let any conversation's agent write into any
 * other's chat. Checked by delivery on every row (the agent writes its session DB directly, so a check in the MCP
 * tool alone is no boundary) and published to the session as `destinations` so the tool can refuse first.
 */
export interface Destination {
  channelType: string;
  platformId: string;
}

export function outboundDestinations(store: CentralStore, session: SessionRecord, defaultGroupName: string | undefined): Destination[] {
  const own = { channelType: session.channelType, platformId: session.platformId };
  const group = store.getAgentGroup(session.agentGroupId);
  if (!group || group.name === defaultGroupName) return [own];
  const bound = store.bindingsOf(group.id).map((b) => ({ channelType: b.channelType, platformId: b.platformId }));
  return [own, ...bound.filter((b) => b.channelType !== own.channelType || b.platformId !== own.platformId)];
}

/**
 * The check of one delivery pass over `session`'s rows: why a row may not go to `to`, or undefined when it may. The
 * destinations are read once per pass, not once per row.
 */
export function outboundCheck(store: CentralStore, session: SessionRecord, defaultGroupName: string | undefined): (to: ConversationRef) => string | undefined {
  const allowed = outboundDestinations(store, session, defaultGroupName);
  return (to) =>
    allowed.some((d) => d.channelType === to.channelType && d.platformId === to.platformId)
      ? undefined
      : `not sent: this conversation may send only to ${allowed.map((d) => `${d.channelType}:${d.platformId}`).join(', ')}, not to ${to.channelType}:${to.platformId}`;
}
