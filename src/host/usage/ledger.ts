import type Database from 'better-sqlite3';
import { z } from 'zod';
import { prepared } from '../../db/connection.js';
import { isoNow } from '../../shared/time.js';
import { randomUUID } from '../../shared/uuid.js';
import type { TurnUsageRow } from '../../db/usage.js';
import type { Logger } from '../../shared/log.js';
import { modelUsageSchema, turnUsageSchema, type ModelUsage } from '../../shared/usage.js';
import type { SessionRecord } from '../central-db/types.js';
import type { PriceTable } from './prices.js';

/**
 * The usage ledger in the central DB: the host copies each session's `turn_usage` rows (written by its runner with
 * every answer) into `usage_ledger`, one row per turn and model, keyed by session, agent group, conversation, task
 * series, model and time. The session DB is the agent's, so every row is validated; a bad row is logged and skipped,
 * never trusted. The session, group and conversation come from the host's own records, not from the row.
 *
 * Beside them, one row per model call the credential proxy forwarded (`source = 'proxy'`), with the tokens the
 * upstream itself reported: those always count. A runner's row counts only when the proxy metered no call of its
 * session during that turn; else it is kept as a hint (`counted = 0`) and the proxy's calls of the turn take its turn
 * id and task series. So a call is counted once, and what the proxy saw cannot be made smaller by the session DB.
 */
export interface CollectedTurn {
  agentGroupId: string;
  provider: string;
  /** true: the proxy metered this turn's calls itself; the runner's numbers are not counted (nor in the metrics). */
  hint: boolean;
  /** one entry per model that worked on the turn, cost filled from the price table where the provider gave none. */
  models: (ModelUsage & { costUsd: number | undefined })[];
  durationMs: number;
}

/**
 * The most one turn is counted for, per field: far above any real turn (a model's context is a few million tokens),
 * low enough that no number of agent-written rows makes a sum unusable. A row above it counts as this much.
 */
export const TURN_TOKENS_MAX = 10_000_000_000;
export const TURN_COST_MAX_USD = 1_000_000;
const clampTokens = (n: number): number => Math.min(n, TURN_TOKENS_MAX);
/** A model's tokens, each at most the cap (a runner's row and a proxy call alike). */
const clampUsage = (m: ModelUsage): ModelUsage => ({
  model: m.model,
  inputTokens: clampTokens(m.inputTokens),
  outputTokens: clampTokens(m.outputTokens),
  cacheReadTokens: clampTokens(m.cacheReadTokens),
  cacheWriteTokens: clampTokens(m.cacheWriteTokens),
});

/** Turns copied per pass at most; the rest wait for the next tick. */
const BATCH = 500;

/**
 * How far around a runner's turn (its end, and its start: the end less its duration) proxy calls are taken for the
 * turn's: the runner and the host stamp times on the same clock, a little apart. A duration past a day is a day.
 */
const TURN_SLACK_MS = 2000;
const TURN_SPAN_MAX_MS = 86_400_000;

/** A model call the credential proxy forwards, as the host knows it (never from the agent). */
export interface ProxyCall {
  sessionId: string;
  agentGroupId: string;
  conversation: string;
  /** the upstream API (`anthropic`, `openai`): the row's provider. */
  api: string;
}

export class UsageLedger {
  constructor(
    readonly db: Database.Database,
    private readonly prices: PriceTable,
    private readonly log: Logger,
  ) {}

  /**
   * The session's database was set up afresh: its usage rows start at id 1 again, so the cursor starts over (a row
   * read again is ignored: the ledger keeps one per session, turn and model).
   */
  restart(sessionId: string): void {
    prepared(this.db, 'DELETE FROM usage_cursors WHERE session_id = ?').run(sessionId);
  }

  /** The id of the session's last usage row copied into the ledger (0: none yet). */
  cursor(sessionId: string): number {
    return (prepared(this.db, 'SELECT last_id FROM usage_cursors WHERE session_id = ?').get(sessionId) as { last_id: number } | undefined)?.last_id ?? 0;
  }

  /** Copy the session's new usage rows into the ledger (at most BATCH); returns the turns copied. */
  async collect(session: SessionRecord, read: (afterId: number) => Promise<TurnUsageRow[]>, latestId?: number): Promise<CollectedTurn[]> {
    const cursor = this.cursor(session.id);
    if (latestId !== undefined && latestId <= cursor) return [];
    const rows = (await read(cursor)).slice(0, BATCH);
    if (rows.length === 0) return [];
    const insert = prepared(
      this.db,
      `INSERT OR IGNORE INTO usage_ledger (session_id, turn_id, agent_group_id, conversation, series_id, provider, model, at,
         input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_source, duration_ms, counted)
       VALUES (@sessionId, @turnId, @groupId, @conversation, @seriesId, @provider, @model, @at,
         @input, @output, @cacheRead, @cacheWrite, @cost, @costSource, @duration, @counted)`,
    );
    // the proxy's calls of this session within the turn, not yet taken by a turn, become the turn's
    const claim = prepared(
      this.db,
      `UPDATE usage_ledger SET turn_id = @turnId, series_id = @seriesId
       WHERE session_id = @sessionId AND source = 'proxy' AND turn_id = 'call:' || call_id AND at >= @from AND at <= @to`,
    );
    const collected: CollectedTurn[] = [];
    this.db
      .transaction(() => {
        for (const row of rows) {
          const turn = this.parse(row, session);
          if (!turn) continue;
          const at = clampTime(row.created_at);
          const end = Date.parse(at);
          const from = new Date(end - Math.min(turn.durationMs, TURN_SPAN_MAX_MS) - TURN_SLACK_MS).toISOString();
          const to = new Date(end + TURN_SLACK_MS).toISOString();
          turn.hint = claim.run({ sessionId: session.id, turnId: row.turn_id, seriesId: row.series_id, from, to }).changes > 0;
          if (turn.hint) for (const model of turn.models) if (model.costUsd !== undefined) this.priceFromHint(session.id, row.turn_id, model);
          turn.models.forEach((model, index) => {
            const provided = model.costUsd !== undefined;
            const cost = provided ? model.costUsd : this.prices.cost(model);
            model.costUsd = cost;
            insert.run({
              sessionId: session.id,
              turnId: row.turn_id,
              groupId: session.agentGroupId,
              conversation: conversationKey(session),
              seriesId: row.series_id,
              provider: row.provider,
              model: model.model,
              at,
              input: model.inputTokens,
              output: model.outputTokens,
              cacheRead: model.cacheReadTokens,
              cacheWrite: model.cacheWriteTokens,
              cost: cost === undefined ? null : Math.min(cost, TURN_COST_MAX_USD),
              costSource: cost === undefined ? null : provided ? 'provider' : 'price-table',
              // the turn's duration once, on its first model, so sums over models stay right
              duration: index === 0 ? turn.durationMs : 0,
              counted: turn.hint ? 0 : 1,
            });
          });
          collected.push(turn);
        }
        prepared(this.db, `INSERT INTO usage_cursors (session_id, last_id) VALUES (?, ?) ON CONFLICT(session_id) DO UPDATE SET last_id = excluded.last_id`).run(
          session.id,
          rows[rows.length - 1]!.id,
        );
      })
      .immediate();
    return collected;
  }

  /**
   * The proxy's calls of a turn whose model the price table does not know take the cost the runner reported for that
   * model, shared by their tokens: the only estimate there is (Claude Code's own, say), while the tokens stay the
   * proxy's. A price in the table always wins over it.
   */
  private priceFromHint(sessionId: string, turnId: string, hint: ModelUsage): void {
    const where = `session_id = @sessionId AND source = 'proxy' AND turn_id = @turnId AND model = @model AND cost_usd IS NULL`;
    const params = { sessionId, turnId, model: hint.model };
    const { tokens, calls } = prepared(
      this.db,
      `SELECT total(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) AS tokens, count(*) AS calls FROM usage_ledger WHERE ${where}`,
    ).get(params) as { tokens: number; calls: number };
    if (calls === 0) return;
    prepared(
      this.db,
      `UPDATE usage_ledger SET cost_source = 'runner',
         cost_usd = @cost * CASE WHEN @tokens > 0 THEN (input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) / @tokens ELSE 1.0 / @calls END
       WHERE ${where}`,
    ).run({ ...params, cost: Math.min(hint.costUsd ?? 0, TURN_COST_MAX_USD), tokens, calls });
  }

  private parse(row: TurnUsageRow, session: SessionRecord): CollectedTurn | undefined {
    const byModel = parseByModel(row.by_model);
    const parsed = turnUsageSchema.safeParse({
      model: row.model,
      inputTokens: row.input_tokens,
      outputTokens: row.output_tokens,
      cacheReadTokens: row.cache_read_tokens,
      cacheWriteTokens: row.cache_write_tokens,
      ...(row.cost_usd === null ? {} : { costUsd: row.cost_usd }),
      durationMs: row.duration_ms,
      ...(byModel === undefined ? {} : { byModel }),
    });
    const provider = z.string().min(1).max(100).safeParse(row.provider);
    if (!parsed.success || !provider.success || byModel === null || typeof row.turn_id !== 'string') {
      const issue = parsed.success ? 'provider, by_model or turn_id' : `${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message}`;
      this.log.warn(`usage row ${row.id} of session ${session.id} skipped: not valid (${issue})`);
      return undefined;
    }
    const usage = parsed.data;
    const models = usage.byModel?.length ? usage.byModel : [usage];
    return {
      agentGroupId: session.agentGroupId,
      provider: provider.data,
      hint: false,
      models: models.map((m) => ({ ...clampUsage(m), costUsd: m.costUsd === undefined ? undefined : Math.min(m.costUsd, TURN_COST_MAX_USD) })),
      durationMs: usage.durationMs,
    };
  }

  /** A model call the proxy is forwarding: it counts from now (no tokens until {@link finishCall}). Returns its id. */
  startCall(call: ProxyCall): string {
    const id = randomUUID();
    prepared(
      this.db,
      `INSERT INTO usage_ledger (session_id, turn_id, agent_group_id, conversation, series_id, provider, model, at,
         input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_source, duration_ms, source, call_id, counted)
       VALUES (?, ?, ?, ?, NULL, ?, 'unknown', ?, 0, 0, 0, 0, 0, NULL, 0, 'proxy', ?, 1)`,
    ).run(call.sessionId, `call:${id}`, call.agentGroupId, call.conversation, call.api, isoNow(), id);
    return id;
  }

  /**
   * What the upstream reported for call `id`, priced from the table; undefined usage (an error answer, a stream cut
   * before any usage) leaves the call with no tokens. Returns the usage as recorded.
   */
  finishCall(id: string, usage: ModelUsage | undefined, durationMs: number): (ModelUsage & { costUsd: number | undefined }) | undefined {
    const duration = Math.round(Math.max(0, durationMs));
    if (!usage) {
      prepared(this.db, `UPDATE usage_ledger SET duration_ms = ? WHERE source = 'proxy' AND call_id = ?`).run(duration, id);
      return undefined;
    }
    const clamped = clampUsage(usage);
    const cost = this.prices.cost(clamped);
    prepared(
      this.db,
      `UPDATE usage_ledger SET model = @model, input_tokens = @input, output_tokens = @output, cache_read_tokens = @cacheRead,
         cache_write_tokens = @cacheWrite, cost_usd = @cost, cost_source = @costSource, duration_ms = @duration
       WHERE source = 'proxy' AND call_id = @id`,
    ).run({
      id,
      model: clamped.model,
      input: clamped.inputTokens,
      output: clamped.outputTokens,
      cacheRead: clamped.cacheReadTokens,
      cacheWrite: clamped.cacheWriteTokens,
      cost: cost === undefined ? null : Math.min(cost, TURN_COST_MAX_USD),
      costSource: cost === undefined ? null : 'price-table',
      duration,
    });
    return { ...clamped, costUsd: cost };
  }

  /** Tokens (input + output) and dollars a group spent since `fromIso` (the rows that count: not runners' hints). */
  spent(agentGroupId: string, fromIso: string): { tokens: number; usd: number } {
    const row = prepared(
      this.db,
      // total() never overflows (sum() of integers fails past 2^63, which agent-written rows could reach)
      `SELECT total(input_tokens) + total(output_tokens) AS tokens, total(cost_usd) AS usd
       FROM usage_ledger WHERE agent_group_id = ? AND at >= ? AND counted = 1`,
    ).get(agentGroupId, fromIso) as { tokens: number; usd: number };
    return row;
  }
}

/** `channel:platform`, or `channel:platform/thread` for a per-thread session: how reports name a conversation. */
export function conversationKey(session: SessionRecord): string {
  return `${session.channelType}:${session.platformId}${session.threadKey ? `/${session.threadKey}` : ''}`;
}

/** undefined: no breakdown; null: a breakdown that is not valid. */
function parseByModel(raw: string | null): ModelUsage[] | undefined | null {
  if (raw === null) return undefined;
  try {
    const parsed = z.array(modelUsageSchema).max(100).safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : null;
  } catch {
    // agent-written usage that is not JSON is ignored, as invalid usage is
    return null;
  }
}

/** The row's time when it is a time and not in the future; else now (a row cannot move spending into the future). */
function clampTime(iso: string): string {
  const ms = typeof iso === 'string' ? Date.parse(iso) : NaN;
  const now = Date.now();
  return new Date(Number.isNaN(ms) || ms > now ? now : ms).toISOString();
}
