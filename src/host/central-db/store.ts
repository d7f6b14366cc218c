import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { BUSY_TIMEOUT_MS, prepared } from '../../db/connection.js';
import { isoNow } from '../../shared/time.js';
import { restrictDatabaseFiles } from '../home.js';
import { adoptedFolder, resolvedFolder, storedFolder } from '../home-paths.js';
import { migrateCentral } from './schema.js';
import { z } from 'zod';
import { parseMcpServers, type McpServers } from '../../db/mcp-servers.js';
import type { AgentGroup, Binding, InboundSender, PendingQuestion, SessionMode, SessionRecord, TriggerRules } from './types.js';

/**
 * The central DB (`<home>/pincer.db`): agent groups and their admins, conversation bindings, sessions, questions in
 * flight and the HTTP channel's mailbox. Only the host process writes it; WAL so `sqlite3` can read it meanwhile.
 */
export function openCentralDb(file: string): Database.Database {
  const db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
  restrictDatabaseFiles(file); // before WAL mode creates the -wal and -shm files with the DB's mode
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  migrateCentral(db);
  return db;
}

interface GroupRow {
  id: string;
  name: string;
  folder: string;
  provider: string;
  model: string | null;
  session_mode: SessionMode;
  timezone: string;
  trigger_rules: string | null;
  config_generation: number;
  mcp_servers: string | null;
  created_at: string;
}

const TriggerRulesSchema = z.object({
  groups: z.enum(['mention', 'always']).default('mention'),
  allowedUsers: z.array(z.string().min(1)).default([]),
});

/** The stored rules, validated; anything unreadable falls back to the defaults (mention only, everybody). */
export function parseTriggerRules(value: unknown): TriggerRules {
  const parsed = TriggerRulesSchema.safeParse(value ?? {});
  return parsed.success ? parsed.data : { groups: 'mention', allowedUsers: [] };
}

interface SessionRow {
  id: string;
  agent_group_id: string;
  channel_type: string;
  platform_id: string;
  thread_key: string;
  folder: string;
  provider_session_id: string | null;
  mcp_servers: string | null;
  created_at: string;
}

/**
 * Stored servers, validated again on the way out: a row written by an older version (or by hand) that no longer
 * passes is read as no servers rather than publishing something the runner would refuse to start with.
 */
export function storedMcpServers(text: string | null): McpServers {
  const parsed = parseMcpServers(parseJsonOrNull(text) ?? {});
  return parsed.ok ? parsed.servers : {};
}

export interface NewAgentGroup {
  name: string;
  folder: string;
  provider: string;
  model?: string | null;
  sessionMode?: SessionMode;
  timezone: string;
  admins?: string[];
  triggerRules?: TriggerRules;
}

export class CentralStore {
  /** group id → the provider of this run (`--provider` without `--save`), never written to the DB. */
  private readonly runProviders = new Map<string, string>();

  /**
   * `home`: the folder session paths are stored relative to (a movable home); without it (a read-only look at the DB)
   * relative folders are returned as stored.
   */
  constructor(
    readonly db: Database.Database,
    private readonly home?: string,
  ) {}

  createAgentGroup(group: NewAgentGroup): AgentGroup {
    const id = `ag-${randomUUID().slice(0, 8)}`;
    this.db
      .transaction(() => {
        prepared(
          this.db,
          `INSERT INTO agent_groups (id, name, folder, provider, model, session_mode, timezone, trigger_rules, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          id,
          group.name,
          group.folder,
          group.provider,
          group.model ?? null,
          group.sessionMode ?? 'shared',
          group.timezone,
          group.triggerRules ? JSON.stringify(group.triggerRules) : null,
          isoNow(),
        );
        for (const admin of group.admins ?? []) this.addAdmin(id, admin);
      })
      .immediate();
    return this.getAgentGroup(id)!;
  }

  /**
   * Change a group's runner settings and bump its configuration generation. A provider given here is saved, and ends a
   * provider of this run ({@link runGroupOn}); without one the saved provider stays (never this run's).
   */
  updateAgentGroup(id: string, change: { provider?: string; model?: string | null; sessionMode?: SessionMode; timezone?: string }): AgentGroup {
    const row = prepared(this.db, 'SELECT * FROM agent_groups WHERE id = ?').get(id) as GroupRow | undefined;
    if (!row) throw new Error(`no agent group ${id}`);
    const current = { ...this.toGroup(row), provider: row.provider };
    if (change.provider !== undefined) this.runProviders.delete(id);
    prepared(
      this.db,
      `UPDATE agent_groups SET provider = ?, model = ?, session_mode = ?, timezone = ?, config_generation = config_generation + 1
       WHERE id = ?`,
    ).run(
      change.provider ?? current.provider,
      change.model === undefined ? current.model : change.model,
      change.sessionMode ?? current.sessionMode,
      change.timezone ?? current.timezone,
      id,
    );
    return this.getAgentGroup(id)!;
  }

  /**
   * Run `id` on `provider` while this store is open (`--provider` without `--save`), the saved provider untouched: the
   * group reads with it from now on. Its inputs to a generation change with it (see `inputsOf`), so set before runners
   * start it is what they get; the saved one again: none for this run.
   */
  runGroupOn(id: string, provider: string): void {
    const row = prepared(this.db, 'SELECT provider FROM agent_groups WHERE id = ?').get(id) as { provider: string } | undefined;
    if (!row) throw new Error(`no agent group ${id}`);
    if (provider === row.provider) this.runProviders.delete(id);
    else this.runProviders.set(id, provider);
  }

  /**
   * Replace a group's MCP servers (already validated) and bump its configuration generation, so the next runner start
   * publishes them; a session's own servers with `sessionId`.
   */
  setMcpServers(target: { agentGroupId: string } | { sessionId: string }, servers: McpServers): void {
    const json = Object.keys(servers).length > 0 ? JSON.stringify(servers) : null;
    if ('sessionId' in target) {
      prepared(this.db, 'UPDATE sessions SET mcp_servers = ? WHERE id = ?').run(json, target.sessionId);
      return;
    }
    prepared(this.db, 'UPDATE agent_groups SET mcp_servers = ?, config_generation = config_generation + 1 WHERE id = ?').run(json, target.agentGroupId);
  }

  setTriggerRules(agentGroupId: string, rules: TriggerRules): void {
    prepared(this.db, 'UPDATE agent_groups SET trigger_rules = ? WHERE id = ?').run(JSON.stringify(rules), agentGroupId);
  }

  addAdmin(agentGroupId: string, userId: string): void {
    prepared(this.db, 'INSERT OR IGNORE INTO agent_group_admins (agent_group_id, user_id) VALUES (?, ?)').run(agentGroupId, userId);
  }

  getAgentGroup(id: string): AgentGroup | undefined {
    const row = prepared(this.db, 'SELECT * FROM agent_groups WHERE id = ?').get(id) as GroupRow | undefined;
    return row && this.toGroup(row);
  }

  findAgentGroup(idOrName: string): AgentGroup | undefined {
    const row = prepared(this.db, 'SELECT * FROM agent_groups WHERE id = ? OR name = ?').get(idOrName, idOrName) as GroupRow | undefined;
    return row && this.toGroup(row);
  }

  listAgentGroups(): AgentGroup[] {
    return (prepared(this.db, 'SELECT * FROM agent_groups ORDER BY created_at').all() as GroupRow[]).map((row) => this.toGroup(row));
  }

  bind(channelType: string, platformId: string, agentGroupId: string): void {
    prepared(
      this.db,
      `INSERT INTO bindings (channel_type, platform_id, agent_group_id, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT(channel_type, platform_id) DO UPDATE SET agent_group_id = excluded.agent_group_id`,
    ).run(channelType, platformId, agentGroupId, isoNow());
  }

  /** Every conversation bound to an agent group, oldest first. */
  bindingsOf(agentGroupId: string): Binding[] {
    const rows = prepared(this.db, 'SELECT channel_type, platform_id FROM bindings WHERE agent_group_id = ? ORDER BY created_at').all(agentGroupId) as {
      channel_type: string;
      platform_id: string;
    }[];
    return rows.map((r) => ({ channelType: r.channel_type, platformId: r.platform_id, agentGroupId }));
  }

  getBinding(channelType: string, platformId: string): Binding | undefined {
    const row = prepared(this.db, 'SELECT agent_group_id FROM bindings WHERE channel_type = ? AND platform_id = ?').get(channelType, platformId) as
      { agent_group_id: string } | undefined;
    return row && { channelType, platformId, agentGroupId: row.agent_group_id };
  }

  findSession(agentGroupId: string, channelType: string, platformId: string, threadKey: string): SessionRecord | undefined {
    const row = prepared(this.db, 'SELECT * FROM sessions WHERE agent_group_id = ? AND channel_type = ? AND platform_id = ? AND thread_key = ?').get(
      agentGroupId,
      channelType,
      platformId,
      threadKey,
    ) as SessionRow | undefined;
    return row && toSession(row, this.home);
  }

  getSession(id: string): SessionRecord | undefined {
    const row = prepared(this.db, 'SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
    return row && toSession(row, this.home);
  }

  listSessions(): SessionRecord[] {
    return (prepared(this.db, 'SELECT * FROM sessions ORDER BY created_at').all() as SessionRow[]).map((row) => toSession(row, this.home));
  }

  insertSession(session: Omit<SessionRecord, 'providerSessionId' | 'mcpServers' | 'createdAt'>): SessionRecord {
    prepared(
      this.db,
      `INSERT INTO sessions (id, agent_group_id, channel_type, platform_id, thread_key, folder, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      session.id,
      session.agentGroupId,
      session.channelType,
      session.platformId,
      session.threadKey,
      this.home ? storedFolder(this.home, session.folder) : session.folder,
      isoNow(),
    );
    return this.getSession(session.id)!;
  }

  /** Sessions stored with an absolute folder this home should hold relative to it (see home-paths.ts): how many. */
  adoptSessionFolders(): number {
    if (!this.home) return 0;
    const home = this.home;
    let changed = 0;
    for (const row of prepared(this.db, 'SELECT id, folder FROM sessions').all() as { id: string; folder: string }[]) {
      const adopted = adoptedFolder(home, row.folder);
      if (adopted === undefined) continue;
      prepared(this.db, 'UPDATE sessions SET folder = ? WHERE id = ?').run(adopted, row.id);
      changed += 1;
    }
    return changed;
  }

  /** When the session's next scheduled message falls due (so a session with no live process is woken for it). */
  setNextWakeAt(sessionId: string, at: string | null): void {
    prepared(this.db, 'UPDATE sessions SET next_wake_at = ? WHERE id = ? AND next_wake_at IS NOT ?').run(at, sessionId, at);
  }

  /** A served session's launch state: its current epoch (0: never launched) and when it next has something due. */
  launchStateOf(sessionId: string): { epoch: number; nextWakeAt: string | null } {
    const row = prepared(this.db, 'SELECT epoch, next_wake_at FROM sessions WHERE id = ?').get(sessionId) as
      { epoch: number; next_wake_at: string | null } | undefined;
    return { epoch: row?.epoch ?? 0, nextWakeAt: row?.next_wake_at ?? null };
  }

  /** The next launch epoch of a served session: one more than the last, stored before the launch starts. */
  nextEpoch(sessionId: string): number {
    return (prepared(this.db, 'UPDATE sessions SET epoch = epoch + 1 WHERE id = ? RETURNING epoch').get(sessionId) as { epoch: number }).epoch;
  }

  setProviderSessionId(sessionId: string, providerSessionId: string | null): void {
    prepared(this.db, 'UPDATE sessions SET provider_session_id = ? WHERE id = ?').run(providerSessionId, sessionId);
  }

  recordQuestion(question: Omit<PendingQuestion, 'answeredAt'>): void {
    prepared(
      this.db,
      `INSERT OR IGNORE INTO questions (question_id, session_id, channel_type, platform_id, thread_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ).run(question.questionId, question.sessionId, question.channelType, question.platformId, question.threadId, isoNow());
  }

  getQuestion(questionId: string): PendingQuestion | undefined {
    const row = prepared(this.db, 'SELECT * FROM questions WHERE question_id = ?').get(questionId) as
      { question_id: string; session_id: string; channel_type: string; platform_id: string; thread_id: string | null; answered_at: string | null } | undefined;
    return (
      row && {
        questionId: row.question_id,
        sessionId: row.session_id,
        channelType: row.channel_type,
        platformId: row.platform_id,
        threadId: row.thread_id,
        answeredAt: row.answered_at,
      }
    );
  }

  /** Mark a question answered; false when it already was (a question takes one answer). */
  markQuestionAnswered(questionId: string): boolean {
    const result = prepared(this.db, 'UPDATE questions SET answered_at = ? WHERE question_id = ? AND answered_at IS NULL').run(isoNow(), questionId);
    return result.changes === 1;
  }

  /**
   * Remember who sent an inbound message the host wrote into a session. System actions take their requester from
   * here only: the session DB is the agent's and may say anything.
   */
  recordSender(record: Omit<InboundSender, 'createdAt'>): void {
    prepared(
      this.db,
      `INSERT OR REPLACE INTO inbound_senders (session_id, message_id, sender_id, channel_type, platform_id, thread_id, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ).run(record.sessionId, record.messageId, record.senderId, record.channelType, record.platformId, record.threadId, isoNow());
  }

  /** The host's record of an inbound message, with `latest` true when no later one was recorded in its session. */
  getSender(sessionId: string, messageId: string): (InboundSender & { latest: boolean }) | undefined {
    const row = prepared(
      this.db,
      `SELECT s.*, NOT EXISTS (SELECT 1 FROM inbound_senders l WHERE l.session_id = s.session_id AND l.rowid > s.rowid) AS latest
       FROM inbound_senders s WHERE s.session_id = ? AND s.message_id = ?`,
    ).get(sessionId, messageId) as
      | {
          session_id: string;
          message_id: string;
          sender_id: string | null;
          channel_type: string;
          platform_id: string;
          thread_id: string | null;
          created_at: string;
          latest: number;
        }
      | undefined;
    return (
      row && {
        sessionId: row.session_id,
        messageId: row.message_id,
        senderId: row.sender_id,
        channelType: row.channel_type,
        platformId: row.platform_id,
        threadId: row.thread_id,
        createdAt: row.created_at,
        latest: row.latest === 1,
      }
    );
  }

  private toGroup(row: GroupRow): AgentGroup {
    const admins = (
      prepared(this.db, 'SELECT user_id FROM agent_group_admins WHERE agent_group_id = ? ORDER BY user_id').all(row.id) as {
        user_id: string;
      }[]
    ).map((r) => r.user_id);
    return {
      id: row.id,
      name: row.name,
      folder: row.folder,
      ...providerOf(row.provider, this.runProviders.get(row.id)),
      model: row.model,
      sessionMode: row.session_mode,
      timezone: row.timezone,
      configGeneration: row.config_generation,
      admins,
      triggerRules: parseTriggerRules(parseJsonOrNull(row.trigger_rules)),
      mcpServers: storedMcpServers(row.mcp_servers),
      createdAt: row.created_at,
    };
  }
}

/** The group's provider fields: the saved one, or this run's with the saved one beside it. */
function providerOf(saved: string, run: string | undefined): Pick<AgentGroup, 'provider' | 'savedProvider'> {
  return run === undefined || run === saved ? { provider: saved } : { provider: run, savedProvider: saved };
}

function parseJsonOrNull(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    // a damaged column reads as absent; the row is kept
    return null;
  }
}

function toSession(row: SessionRow, home: string | undefined): SessionRecord {
  return {
    id: row.id,
    agentGroupId: row.agent_group_id,
    channelType: row.channel_type,
    platformId: row.platform_id,
    threadKey: row.thread_key,
    folder: resolvedFolder(home, row.folder),
    providerSessionId: row.provider_session_id,
    mcpServers: storedMcpServers(row.mcp_servers),
    createdAt: row.created_at,
  };
}
