/** What a turn cost: the usage a provider reports with each `result` (src/providers/types.ts), its schema and sums. */
import { z } from 'zod';

/** Tokens (whole, ≥ 0) and money one model spent. Input tokens do not include cache reads or cache writes. */
export interface ModelUsage {
  model: string;
  inputTokens: number;
  outputTokens: number;
  /** prompt tokens served from the provider's cache. */
  cacheReadTokens: number;
  /** prompt tokens written to the provider's cache. */
  cacheWriteTokens: number;
  /** in US dollars, when the provider reports it; left out when unknown (the host may price it from its table). */
  costUsd?: number;
}

/**
 * What one turn cost: from the prompt (or push) to its `result`. The totals and `model` describe the whole turn;
 * `byModel` breaks it down when several models worked on it (Claude's per-model usage), and then sums to the totals.
 */
export interface TurnUsage extends ModelUsage {
  /** wall-clock milliseconds the turn took, as the provider measured it. */
  durationMs: number;
  byModel?: ModelUsage[];
}

/**
 * The same shape as a zod schema, for the places that read it from outside the process: the mock's MOCK_USAGE, and
 * the host reading what a runner recorded in its (untrusted) session DB.
 */
const tokens = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

export const modelUsageSchema = z.object({
  model: z.string().min(1).max(200),
  inputTokens: tokens,
  outputTokens: tokens,
  cacheReadTokens: tokens,
  cacheWriteTokens: tokens,
  costUsd: z.number().nonnegative().finite().optional(),
});

export const turnUsageSchema = modelUsageSchema.extend({
  durationMs: z.number().nonnegative().finite(),
  byModel: z.array(modelUsageSchema).max(100).optional(),
});

/** Add usage up by field; `costUsd` is known only when every part knows it. */
export function sumUsage(model: string, parts: ModelUsage[]): ModelUsage {
  const total: ModelUsage = { model, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
  for (const part of parts) {
    total.inputTokens += part.inputTokens;
    total.outputTokens += part.outputTokens;
    total.cacheReadTokens += part.cacheReadTokens;
    total.cacheWriteTokens += part.cacheWriteTokens;
    total.costUsd = total.costUsd === undefined || part.costUsd === undefined ? undefined : total.costUsd + part.costUsd;
  }
  if (total.costUsd === undefined) delete total.costUsd;
  return total;
}
