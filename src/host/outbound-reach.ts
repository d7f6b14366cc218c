import type { CentralStore } from './central-db/store.js';
import type { SessionRecord } from './central-db/types.js';
import type { AgentRoute, ConversationRef } from './types.js';

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

/**
 * Whether a row of `session` may go to agent group `target` (`send_to_agent`; docs/security.md "Outbound"): the
 * message goes into the target's session and wakes its agent, which may act in its own conversations, so an agent
 * may not message any group it can name. Allowed, from the host's own records only: the session's own conversation
 * (a session made for `target`'s messages), an answer to a message the host delivered into this session from
 * `target` (the row's `in_reply_to` is recorded with `target` as its sender), or a route the administrator set
 * (PINCER_AGENT_ROUTES `from>to`, by group name). Returns why not, or undefined when it may.
 */
export function agentReach(
  store: CentralStore,
  session: SessionRecord,
  target: { id: string; name: string },
  inReplyTo: string | null,
  routes: readonly AgentRoute[] = [],
): string | undefined {
  if (session.channelType === 'agent' && session.platformId === target.id) return undefined;
  if (inReplyTo && store.getSender(session.id, inReplyTo)?.senderId === `agent:${target.id}`) return undefined;
  const group = store.getAgentGroup(session.agentGroupId);
  if (group && routes.some((r) => r.from === group.name && r.to === target.name)) return undefined;
  const allowed = agentTargets(store, session, routes);
  return `not sent: agent group ${group?.name ?? session.agentGroupId} may message ${allowed.length > 0 ? `only ${allowed.join(', ')}` : 'no other agent group'} on its own (PINCER_AGENT_ROUTES) and answer a group that wrote to it, not ${target.name}`;
}

/** Names of the groups `session`'s group may message on its own (its routes to groups that exist). */
export function agentTargets(store: CentralStore, session: SessionRecord, routes: readonly AgentRoute[] = []): string[] {
  const group = store.getAgentGroup(session.agentGroupId);
  if (!group) return [];
  return routes.filter((r) => r.from === group.name && store.findAgentGroup(r.to)).map((r) => r.to);
}
