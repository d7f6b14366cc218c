import type Database from 'better-sqlite3';
import { z } from 'zod';
import { prepared } from '../../db/connection.js';
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
 */
export interface CollectedTurn {
  agentGroupId: string;
  provider: string;
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

/** Turns copied per pass at most; the rest wait for the next tick. */
const BATCH = 500;

export class UsageLedger {
  constructor(
    readonly db: Database.Database,
    private readonly prices: PriceTable,
    private readonly log: Logger,
  ) {}

  /** Copy the session's new usage rows into the ledger; returns the turns copied. */
  async collect(session: SessionRecord, read: (afterId: number) => Promise<TurnUsageRow[]>, latestId?: number): Promise<CollectedTurn[]> {
    const cursor =
      (prepared(this.db, 'SELECT last_id FROM usage_cursors WHERE session_id = ?').get(session.id) as { last_id: number } | undefined)?.last_id ?? 0;
    if (latestId !== undefined && latestId <= cursor) return [];
    const rows = (await read(cursor)).slice(0, BATCH);
    if (rows.length === 0) return [];
    const insert = prepared(
      this.db,
      `INSERT OR IGNORE INTO usage_ledger (session_id, turn_id, agent_group_id, conversation, series_id, provider, model, at,
         input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_source, duration_ms)
       VALUES (@sessionId, @turnId, @groupId, @conversation, @seriesId, @provider, @model, @at,
         @input, @output, @cacheRead, @cacheWrite, @cost, @costSource, @duration)`,
    );
    const collected: CollectedTurn[] = [];
    this.db
      .transaction(() => {
        for (const row of rows) {
          const turn = this.parse(row, session);
          if (!turn) continue;
          const at = clampTime(row.created_at);
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
      models: models.map((m) => ({
        model: m.model,
        inputTokens: clampTokens(m.inputTokens),
        outputTokens: clampTokens(m.outputTokens),
        cacheReadTokens: clampTokens(m.cacheReadTokens),
        cacheWriteTokens: clampTokens(m.cacheWriteTokens),
        costUsd: m.costUsd === undefined ? undefined : Math.min(m.costUsd, TURN_COST_MAX_USD),
      })),
      durationMs: usage.durationMs,
    };
  }

  /** Tokens (input + output) and dollars a group spent since `fromIso`. */
  spent(agentGroupId: string, fromIso: string): { tokens: number; usd: number } {
    const row = prepared(
      this.db,
      // total() never overflows (sum() of integers fails past 2^63, which agent-written rows could reach)
      `SELECT total(input_tokens) + total(output_tokens) AS tokens, total(cost_usd) AS usd
       FROM usage_ledger WHERE agent_group_id = ? AND at >= ?`,
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
