import type Database from 'better-sqlite3';
import { randomUUID } from '../shared/uuid.js';
import type { TurnUsage } from '../shared/usage.js';
import { isoNow } from '../shared/time.js';
import { prepared } from './connection.js';
import { insertOutbound } from './messages.js';
import type { RoutingContext } from './types.js';

/**
 * `turn_usage`: what each turn cost, one row per `result` that reported usage, written by the runner in the same
 * transaction as the answer, so an answer is never recorded without its cost (nor the cost twice). The host copies
 * rows into its ledger by `id`; nothing here is trusted by the host without validation.
 */
export interface TurnResult {
  routing: RoutingContext;
  /** the answer's text; null for a turn that answered only through tools. */
  text: string | null;
  usage?: TurnUsage;
  /** the provider that ran the turn (its registry name). */
  provider: string;
  /** the model-runtime generation the host had published to the session when the turn started */
  modelGeneration?: number;
}

/** Write a turn's answer (a chat row in `messages_out`) and its usage in one transaction. Returns the answer's id. */
export function insertTurnResult(db: Database.Database, result: TurnResult): { outboundId: string | null } {
  const write = db.transaction(() => {
    const outbound = result.text ? insertOutbound(db, { kind: 'chat', content: { text: result.text }, routing: result.routing }) : null;
    if (result.usage) insertTurnUsage(db, outbound?.id ?? randomUUID(), result);
    return { outboundId: outbound?.id ?? null };
  });
  return write.immediate();
}

function insertTurnUsage(db: Database.Database, turnId: string, result: TurnResult): void {
  const usage = result.usage!;
  prepared(
    db,
    `INSERT INTO turn_usage (turn_id, in_reply_to, series_id, provider, model, input_tokens, output_tokens,
       cache_read_tokens, cache_write_tokens, cost_usd, duration_ms, by_model, model_generation, created_at)
     VALUES (@turnId, @inReplyTo,
       (SELECT CASE WHEN kind = 'task' THEN coalesce(series_id, id) END FROM messages_in WHERE id = @inReplyTo),
       @provider, @model, @input, @output, @cacheRead, @cacheWrite, @cost, @duration, @byModel, @generation, @now)`,
  ).run({
    turnId,
    inReplyTo: result.routing.inReplyTo,
    provider: result.provider,
    model: usage.model,
    input: usage.inputTokens,
    output: usage.outputTokens,
    cacheRead: usage.cacheReadTokens,
    cacheWrite: usage.cacheWriteTokens,
    cost: usage.costUsd ?? null,
    duration: Math.round(usage.durationMs),
    byModel: usage.byModel ? JSON.stringify(usage.byModel) : null,
    generation: result.modelGeneration ?? null,
    now: isoNow(),
  });
}

/** A `turn_usage` row as stored (the host validates it before use). */
export interface TurnUsageRow {
  id: number;
  turn_id: string;
  in_reply_to: string | null;
  series_id: string | null;
  provider: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd: number | null;
  duration_ms: number;
  by_model: string | null;
  /** null: a runner of an older version, or one the host gave no generation */
  model_generation: number | null;
  created_at: string;
}

/** Usage rows with `id` greater than `afterId`, oldest first. */
export function turnUsageAfter(db: Database.Database, afterId: number, limit = 500): TurnUsageRow[] {
  return prepared(db, 'SELECT * FROM turn_usage WHERE id > ? ORDER BY id LIMIT ?').all(afterId, limit) as TurnUsageRow[];
}
