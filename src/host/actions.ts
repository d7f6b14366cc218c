import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { describeIssues } from '../db/content.js';
import type { OutboundRow } from '../db/types.js';
import type { CentralStore } from './central-db/store.js';
import type { AgentGroup, SessionRecord } from './central-db/types.js';
import { PincerError, isPincerError } from '../shared/errors.js';
import type { McpServerRequests } from './mcp-server-requests.js';
import { planTask, TaskChangeSchema, TaskRequestSchema } from '../db/tasks.js';
import type { InboxRow, SessionPort } from './session/port.js';
import type { SessionDirectory } from './sessions.js';

/**
 * System actions: `messages_out` rows of kind `system` with `{action, …}` content, written by the MCP tools. Each is
 * validated, carried out, and answered with a `system` row in `messages_in` (`{action, status, result?, error?}`),
 * which the runner shows the agent as `[SYSTEM RESPONSE]`.
 */
export type ActionAnswer = { status: 'success'; result: unknown } | { status: 'error'; error: string };

export interface ActionContext {
  port: SessionPort;
  /** write an inbound message into the session as the host does (kept in its inbox until done). */
  write(row: InboxRow): Promise<{ id: string; seq: number }>;
  session: SessionRecord;
  group: AgentGroup;
  row: OutboundRow;
  content: Record<string, unknown>;
}

export interface ActionDeps {
  store: CentralStore;
  sessions: SessionDirectory;
  /** user ids that are admins of every group (PINCER_ADMIN_USER_ID). */
  globalAdmins: readonly string[];
  /** `add_mcp_server`: asks the group's admin (absent: the action is refused) */
  mcpRequests?: McpServerRequests;
}

const RegisterAgentGroup = z.object({
  name: z.string().min(1),
  folder: z.string().min(1),
  platformId: z.string().min(1),
  channelType: z.string().min(1),
  triggerRules: z.unknown().optional(),
  sessionMode: z.enum(['shared', 'per-thread']).optional(),
});
const TaskRef = z.object({ taskId: z.union([z.string().min(1), z.number().int()]).transform(String) });
const UpdateTask = TaskRef.merge(TaskChangeSchema);

export class ActionHandlers {
  constructor(private readonly deps: ActionDeps) {}

  /** Carry out one action. Never throws for bad input: the answer says what was wrong. */
  async run(ctx: ActionContext): Promise<ActionAnswer> {
    try {
      switch (ctx.content.action) {
        case 'register_agent_group':
          return this.registerAgentGroup(ctx);
        case 'add_mcp_server':
          return this.deps.mcpRequests ? await this.deps.mcpRequests.request(ctx) : { status: 'error', error: 'add_mcp_server is not available on this host' };
        case 'update_task':
          return await this.updateTask(ctx);
        case 'schedule_task':
          return await this.scheduleTask(ctx);
        case 'cancel_task':
        case 'pause_task':
        case 'resume_task':
          return await this.setTaskStatus(ctx, ctx.content.action);
        default:
          return { status: 'error', error: `unknown action "${String(ctx.content.action)}"` };
      }
    } catch (err) {
      if (isPincerError(err)) return { status: 'error', error: err.message };
      throw err;
    }
  }

  private registerAgentGroup(ctx: ActionContext): ActionAnswer {
    const input = parse(RegisterAgentGroup, ctx.content);
    const requester = this.requesterOf(ctx);
    const admins = new Set([...ctx.group.admins, ...this.deps.globalAdmins]);
    if (!requester.ok) return { status: 'error', error: `register_agent_group is for admins only; ${requester.why}` };
    if (!admins.has(requester.userId)) {
      return { status: 'error', error: `register_agent_group is for admins only; user "${requester.userId}" is not an admin` };
    }
    const created = this.deps.sessions.createGroup({
      name: input.name,
      folder: input.folder,
      provider: ctx.group.provider,
      model: ctx.group.model,
      sessionMode: input.sessionMode ?? 'shared',
      timezone: ctx.group.timezone,
      admins: [requester.userId],
    });
    this.deps.store.bind(input.channelType, input.platformId, created.id);
    return { status: 'success', result: { agent_group_id: created.id, name: created.name } };
  }

  private async updateTask(ctx: ActionContext): Promise<ActionAnswer> {
    const { taskId, ...change } = parse(UpdateTask, ctx.content);
    const row = (await ctx.port.changeTask(taskId, { op: 'update', ...change }, ctx.group.timezone))!;
    const prompt = (JSON.parse(row.content) as { prompt?: unknown }).prompt;
    return { status: 'success', result: { taskId: row.id, prompt, recurrence: row.recurrence, processAfter: row.process_after } };
  }

  private async scheduleTask(ctx: ActionContext): Promise<ActionAnswer> {
    const plan = planTask(parse(TaskRequestSchema, ctx.content), ctx.group.timezone, { runNow: true });
    const written = await ctx.write({
      id: randomUUID(),
      kind: 'task',
      content: plan.content,
      processAfter: plan.processAfter,
      recurrence: plan.recurrence,
      platformId: ctx.row.platform_id,
      channelType: ctx.row.channel_type,
      threadId: ctx.row.thread_id,
    });
    return { status: 'success', result: { taskId: written.id, processAfter: plan.processAfter, recurrence: plan.recurrence } };
  }

  private async setTaskStatus(ctx: ActionContext, action: 'cancel_task' | 'pause_task' | 'resume_task'): Promise<ActionAnswer> {
    const { taskId } = parse(TaskRef, ctx.content);
    const command =
      action === 'cancel_task' ? { op: 'cancel' as const, by: 'agent' as const } : { op: action === 'pause_task' ? ('pause' as const) : ('resume' as const) };
    const row = await ctx.port.changeTask(taskId, command, ctx.group.timezone);
    return { status: 'success', result: { taskId: row?.id ?? taskId } };
  }

  private requesterOf(ctx: ActionContext): Requester {
    const messageId = ctx.row.in_reply_to;
    if (!messageId) return { ok: false, why: 'the request answers no message, so the requesting user is unknown' };
    const record = this.deps.store.getSender(ctx.session.id, messageId);
    if (!record) return { ok: false, why: `message "${messageId}" was not written by the host, so the requesting user is unknown` };
    if (!record.senderId) return { ok: false, why: 'the requesting message carries no user id, so the requesting user is unknown' };
    if (!record.latest) return { ok: false, why: 'the request must answer the latest message of the conversation (a newer one has arrived since)' };
    return { ok: true, userId: record.senderId };
  }
}

/**
 * Who asked for an action, from the host's own record of the message it answers (central DB `inbound_senders`),
 * never from the session DB: the agent writes that, and could forge a row "from the admin" and answer it. The message
 * must also be the latest one the host wrote into this session, so an agent cannot borrow an admin's old request
 * while answering someone else.
 */
type Requester = { ok: true; userId: string } | { ok: false; why: string };

function parse<T>(schema: z.ZodType<T>, content: Record<string, unknown>): T {
  const parsed = schema.safeParse(content);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path.join('.');
    throw new PincerError('invalid-input', `invalid ${String(content.action)}: ${describeIssues(parsed.error)}`, { field });
  }
  return parsed.data;
}
