import type { ModelUsage as SdkModelUsage, SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import { sumUsage, type ModelUsage, type TurnUsage } from '../../shared/usage.js';

/**
 * What each Claude turn cost. The SDK's `modelUsage` and `total_cost_usd` are running totals of the whole query
 * (every model: main loop, subagents, compaction), carried by each result; a turn's share is the difference from
 * the previous result. A query that resumes a session starts from the totals its transcript saved, so the provider
 * keeps the last totals of each session it ran (`UsageTotals`) as the baseline of the next query. Without one (the
 * first query of a runner resuming an older session), the first turn falls back to the per-turn `usage` of the main
 * loop, without a cost (the host prices it).
 */
export type UsageTotals = Map<string, Record<string, SdkModelUsage>>;

export class ClaudeUsageMeter {
  /** the running totals at the previous result; undefined when unknown (a resumed session seen first now). */
  private previous: Record<string, SdkModelUsage> | undefined;

  constructor(
    /** the session the query resumes, if any. */
    resumes: string | undefined,
    /** the last totals per session, shared by the provider's queries. */
    private readonly totals: UsageTotals = new Map(),
  ) {
    this.previous = resumes === undefined ? {} : totals.get(resumes);
  }

  /** The turn this result ends; `mainModel` is the model of the session (system/init). Call for every result. */
  turn(message: SDKResultMessage, mainModel: string | undefined): TurnUsage {
    const totals = message.modelUsage ?? {};
    const before = this.previous;
    this.previous = totals;
    this.totals.set(message.session_id, totals);
    if (before === undefined) return this.fromMainLoop(message, mainModel);
    const byModel: ModelUsage[] = [];
    for (const [model, now] of Object.entries(totals)) {
      const was = before[model];
      const part: ModelUsage = {
        model,
        inputTokens: delta(now.inputTokens, was?.inputTokens),
        outputTokens: delta(now.outputTokens, was?.outputTokens),
        cacheReadTokens: delta(now.cacheReadInputTokens, was?.cacheReadInputTokens),
        cacheWriteTokens: delta(now.cacheCreationInputTokens, was?.cacheCreationInputTokens),
        costUsd: Math.max(0, now.costUSD - (was?.costUSD ?? 0)),
      };
      if (part.inputTokens + part.outputTokens + part.cacheReadTokens + part.cacheWriteTokens > 0) byModel.push(part);
    }
    if (byModel.length === 0) return this.fromMainLoop(message, mainModel);
    // The session's model names the turn; the one that wrote most when the session's model did not work on it.
    const main = byModel.find((m) => m.model === mainModel) ?? [...byModel].sort((a, b) => b.outputTokens - a.outputTokens)[0]!;
    return { ...sumUsage(main.model, byModel), durationMs: message.duration_ms, ...(byModel.length > 1 ? { byModel } : {}) };
  }

  private fromMainLoop(message: SDKResultMessage, mainModel: string | undefined): TurnUsage {
    const usage = message.usage;
    return {
      model: mainModel ?? Object.keys(message.modelUsage ?? {})[0] ?? 'claude',
      inputTokens: usage.input_tokens ?? 0,
      outputTokens: usage.output_tokens ?? 0,
      cacheReadTokens: usage.cache_read_input_tokens ?? 0,
      cacheWriteTokens: usage.cache_creation_input_tokens ?? 0,
      durationMs: message.duration_ms,
    };
  }
}

function delta(now: number | undefined, was: number | undefined): number {
  return Math.max(0, Math.round((now ?? 0) - (was ?? 0)));
}
