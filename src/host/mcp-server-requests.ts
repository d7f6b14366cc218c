import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { z } from 'zod';
import { prepared } from '../db/connection.js';
import { describeMcpServer, parseMcpServers, secretNamesOf, type McpServerSpec } from '../db/mcp-servers.js';
import type { Logger } from '../shared/log.js';
import { isoNow } from '../shared/time.js';
import type { OutboundRow } from '../db/types.js';
import type { CentralStore } from './central-db/store.js';
import type { AgentGroup, PendingQuestion, SessionRecord } from './central-db/types.js';
import type { ChannelAdapter, InboundReceipt } from './channels/types.js';
import { PincerError, isPincerError } from '../shared/errors.js';
import { addGroupMcpServer } from './mcp-servers.js';
import type { InboxRow } from './session/port.js';
import type { ConversationRef } from './types.js';

/**
 * `add_mcp_server` (the agent asks for an MCP server of its own): the request is validated, recorded in the central DB
 * (`mcp_server_requests`), and put to the conversation as a question with two buttons. Only an answer from an admin of
 * the agent group counts (the group's admins and PINCER_ADMIN_USER_ID, by the user id the channel vouches for); an
 * approved request adds the server as `pincer mcp-server add` would, a refused one changes nothing. The decision, who
 * made it and when, stays in the same row; the agent gets it as a system message and the chat as a notice.
 */
export type McpRequestStatus = 'pending' | 'approved' | 'refused' | 'failed';

export interface McpServerRequest {
  /** the id of the question put to the admin (also the request's id) */
  id: string;
  agentGroupId: string;
  sessionId: string;
  name: string;
  server: McpServerSpec;
  reason: string;
  requestedAt: string;
  status: McpRequestStatus;
  decidedBy: string | null;
  decidedAt: string | null;
  /** why an approved request could not be carried out (a server of that name was added meanwhile) */
  error: string | null;
}

export interface McpServerRequestsDeps {
  store: CentralStore;
  channels: ReadonlyMap<string, ChannelAdapter>;
  /** the host speaking to a conversation (delivery's notify: a lost notice is logged there) */
  notify: (sessionId: string, conversation: ConversationRef, text: string) => Promise<void>;
  /** user ids that are admins of every group (PINCER_ADMIN_USER_ID) */
  globalAdmins: readonly string[];
  log: Logger;
}

/** What the action handlers give (a part of their context; this module is below them). */
export interface McpRequestContext {
  session: SessionRecord;
  group: AgentGroup;
  /** the `system` row of the request */
  row: OutboundRow;
  content: Record<string, unknown>;
}
type Answer = { status: 'success'; result: unknown } | { status: 'error'; error: string };

const Request = z.object({ name: z.string(), server: z.unknown(), reason: z.string().max(2000).optional() });
const APPROVE = 'approve';
const REFUSE = 'refuse';

export class McpServerRequests {
  constructor(private readonly deps: McpServerRequestsDeps) {}

  /** The action `add_mcp_server`: validate, record, ask. Offered again (a host crash), the request is asked once. */
  async request(ctx: McpRequestContext): Promise<Answer> {
    const input = Request.safeParse(ctx.content);
    if (!input.success) return { status: 'error', error: 'invalid add_mcp_server: it needs name, server and reason' };
    const { name, server, reason = '' } = input.data;
    const parsed = parseMcpServers({ [name]: server });
    if (!parsed.ok) return { status: 'error', error: `invalid MCP server: ${parsed.error}` };
    const spec = parsed.servers[name]!;
    const group = ctx.group;
    if (Object.hasOwn(group.mcpServers, name)) return { status: 'error', error: `agent group ${group.name} already has an MCP server "${name}"` };
    if (this.adminsOf(group).size === 0) {
      return { status: 'error', error: `agent group ${group.name} has no admin who could approve it (an admin is named with PINCER_ADMIN_USER_ID)` };
    }
    // Asked in the session's own conversation, from the host's records: the row's routing is the agent's to write,
    // and would let it put an approval button into any chat of the host.
    const conversation: ConversationRef = { channelType: ctx.session.channelType, platformId: ctx.session.platformId, threadId: ctx.session.threadKey || null };
    const channel = this.deps.channels.get(conversation.channelType);
    if (!channel) return { status: 'error', error: `no channel "${conversation.channelType}" on this host to ask the admin on` };

    const id = `mcp-server-${createHash('sha256').update(`${ctx.session.id}\0${ctx.row.id}`).digest('hex').slice(0, 24)}`;
    prepared(
      this.db,
      `INSERT OR IGNORE INTO mcp_server_requests (id, agent_group_id, session_id, name, server, reason, requested_at, status)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'pending')`,
    ).run(id, group.id, ctx.session.id, name, JSON.stringify(spec), reason, isoNow());
    const recorded = this.get(id)!;
    if (recorded.status !== 'pending') return { status: 'success', result: { requestId: id, status: recorded.status } };
    // Offered again while pending (a crash before the ack): the question was put already.
    if (this.deps.store.getQuestion(id)) return { status: 'success', result: { requestId: id, status: 'pending' } };

    this.deps.store.recordQuestion({ questionId: id, sessionId: ctx.session.id, ...conversation });
    await channel.deliver({
      sessionId: ctx.session.id,
      id: null,
      seq: null,
      conversation,
      inReplyTo: null,
      payload: {
        type: 'question',
        questionId: id,
        title: 'Add an MCP server?',
        question: questionText(group, name, spec, reason),
        options: [
          { label: 'Approve', value: APPROVE },
          { label: 'Refuse', value: REFUSE },
        ],
      },
    });
    this.deps.log.info(`MCP server request ${id}: ${group.name} asks for "${name}" (${describeMcpServer(spec)})`);
    return { status: 'success', result: { requestId: id, status: 'pending', note: "the group's admin is asked; the decision comes as a system message" } };
  }

  /** Whether a question is one of these requests' (its answer goes to `decide`, not to the agent's questions). */
  owns(questionId: string): boolean {
    return this.get(questionId) !== undefined;
  }

  /**
   * The admin's answer. A user who is not an admin is refused and the question stays open; a second answer is
   * refused. `write` puts the decision into the requesting session (as the host writes any inbound row).
   */
  async decide(
    question: PendingQuestion,
    answer: { selectedOption: string; userId?: string; userVouched?: boolean },
    write: (row: InboxRow) => Promise<{ id: string; seq: number | null }>,
  ): Promise<InboundReceipt> {
    const request = this.get(question.questionId)!;
    const group = this.deps.store.getAgentGroup(request.agentGroupId);
    if (!group) throw new PincerError('not-found', `the agent group of MCP server request "${request.id}" is gone`);
    if (answer.selectedOption !== APPROVE && answer.selectedOption !== REFUSE) {
      throw new PincerError('invalid-input', `answer "${APPROVE}" or "${REFUSE}" to MCP server request "${request.id}"`, { field: 'selectedOption' });
    }
    const userId = answer.userId;
    if (answer.userVouched === false) {
      throw new PincerError(
        'forbidden',
        `only an admin of agent group ${group.name} may decide on MCP server "${request.name}" (over HTTP, an answer names its user only with an admin token)`,
      );
    }
    if (!userId || !this.adminsOf(group).has(userId)) {
      throw new PincerError(
        'forbidden',
        `only an admin of agent group ${group.name} may decide on MCP server "${request.name}"${userId ? ` (user "${userId}" is not one)` : ' (the answer names no user)'}`,
      );
    }
    if (request.status !== 'pending' || !this.deps.store.markQuestionAnswered(request.id)) {
      throw new PincerError('conflict', `MCP server request "${request.id}" was decided already (${request.status})`);
    }
    let status: McpRequestStatus = answer.selectedOption === APPROVE ? 'approved' : 'refused';
    let error: string | null = null;
    if (status === 'approved') {
      try {
        addGroupMcpServer(this.deps.store, group, request.name, request.server);
      } catch (err) {
        if (!isPincerError(err)) throw err;
        status = 'failed';
        error = err.message;
      }
    }
    prepared(this.db, 'UPDATE mcp_server_requests SET status = ?, decided_by = ?, decided_at = ?, error = ? WHERE id = ?').run(
      status,
      userId,
      isoNow(),
      error,
      request.id,
    );
    this.deps.log.info(`MCP server request ${request.id} (${group.name}: "${request.name}") ${status} by ${userId}${error ? `: ${error}` : ''}`);

    const told = toldAgent(request, status, userId, error);
    const written = await write({
      id: `mcp-decision-${request.id}`,
      kind: 'system',
      content: { action: 'add_mcp_server', ...told },
      platformId: question.platformId,
      channelType: question.channelType,
      threadId: question.threadId,
    });
    // The decision is recorded and the agent told; a lost notice costs the chat one line.
    await this.deps.notify(
      question.sessionId,
      { channelType: question.channelType, platformId: question.platformId, threadId: question.threadId },
      noticeText(group, request, status, userId, error),
    );
    return { sessionId: question.sessionId, id: written.id, seq: written.seq };
  }

  get(id: string): McpServerRequest | undefined {
    const row = prepared(this.db, 'SELECT * FROM mcp_server_requests WHERE id = ?').get(id) as Row | undefined;
    return row && fromRow(row);
  }

  private get db(): Database.Database {
    return this.deps.store.db;
  }

  private adminsOf(group: AgentGroup): Set<string> {
    return new Set([...group.admins, ...this.deps.globalAdmins]);
  }
}

/** Every request of a group, newest first (`GET /v1/groups/<group>/mcp-server-requests`, the web page). */
export function listMcpServerRequests(db: Database.Database, agentGroupId: string, limit = 50): McpServerRequest[] {
  const rows = prepared(db, 'SELECT * FROM mcp_server_requests WHERE agent_group_id = ? ORDER BY requested_at DESC, id LIMIT ?').all(
    agentGroupId,
    limit,
  ) as Row[];
  return rows.map(fromRow);
}

interface Row {
  id: string;
  agent_group_id: string;
  session_id: string;
  name: string;
  server: string;
  reason: string | null;
  requested_at: string;
  status: McpRequestStatus;
  decided_by: string | null;
  decided_at: string | null;
  error: string | null;
}

function fromRow(row: Row): McpServerRequest {
  return {
    id: row.id,
    agentGroupId: row.agent_group_id,
    sessionId: row.session_id,
    name: row.name,
    server: JSON.parse(row.server) as McpServerSpec,
    reason: row.reason ?? '',
    requestedAt: row.requested_at,
    status: row.status,
    decidedBy: row.decided_by,
    decidedAt: row.decided_at,
    error: row.error,
  };
}

function questionText(group: AgentGroup, name: string, spec: McpServerSpec, reason: string): string {
  const secrets = secretNamesOf(spec);
  return (
    `The agent of group ${group.name} asks to add the MCP server "${name}": ${describeMcpServer(spec)}.` +
    (secrets.length ? ` It would be given the secrets ${secrets.join(', ')}.` : '') +
    ` A server runs as the agent, with what the agent may reach.` +
    (reason ? ` Why: ${reason}` : '') +
    ' Only an admin of the group can decide.'
  );
}

function toldAgent(request: McpServerRequest, status: McpRequestStatus, by: string, error: string | null): Answer {
  if (status === 'approved') {
    return {
      status: 'success',
      result: {
        requestId: request.id,
        name: request.name,
        decision: 'approved',
        by,
        note: `its tools are yours as mcp__${request.name}__<tool> from your next start`,
      },
    };
  }
  if (status === 'refused') return { status: 'error', error: `the admin (${by}) refused to add the MCP server "${request.name}"` };
  return { status: 'error', error: `the admin approved the MCP server "${request.name}" but it could not be added: ${error ?? 'unknown'}` };
}

function noticeText(group: AgentGroup, request: McpServerRequest, status: McpRequestStatus, by: string, error: string | null): string {
  if (status === 'approved')
    return `${by} approved the MCP server "${request.name}" for agent group ${group.name}; the agent has its tools from its next start.`;
  if (status === 'refused') return `${by} refused the MCP server "${request.name}" for agent group ${group.name}; nothing was changed.`;
  return `${by} approved the MCP server "${request.name}", but it could not be added: ${error ?? 'unknown'}.`;
}
