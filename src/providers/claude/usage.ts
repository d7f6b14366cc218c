import type { ModelUsage as SdkModelUsage, SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import { sumUsage, type ModelUsage, type TurnUsage } from '../../shared/usage.js';

/**
 * What each Claude turn cost. The SDK's `modelUsage` and `total_cost_usd` are running totals of the whole query
 * (every model: main loop, subagents, compaction), carried by each result; a turn's share is the difference from
 * the previous result. The first result of a query that resumed a session may already include the earlier turns,
 * so there the meter falls back to the per-turn `usage` of the main loop, without a cost (the host prices it).
 */
export class ClaudeUsageMeter {
  /** the running totals at the previous result of this query; undefined before the first. */
  private previous: Record<string, SdkModelUsage> | undefined;

  constructor(
    /** the query resumed an earlier session (its first totals may include earlier turns). */
    private readonly resumed: boolean,
  ) {}

  /** The turn this result ends; `mainModel` is the model of the session (system/init). Call for every result. */
  turn(message: SDKResultMessage, mainModel: string | undefined): TurnUsage {
    const totals = message.modelUsage ?? {};
    const first = this.previous === undefined;
    const before = this.previous ?? {};
    this.previous = totals;
    if (first && this.resumed) return this.fromMainLoop(message, mainModel);
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
