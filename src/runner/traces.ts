import type { TurnUsage } from '../shared/usage.js';
import { NO_TRACING, type SpanHandle, type Tracing } from '../shared/tracing.js';
import type { FormattableMessage } from './format.js';

/**
 * The runner's part of a message's trace: a `pincer.pickup` span per message (from the row's arrival to its claim,
 * child of the host's span recorded in the row) and one `invoke_agent` span per provider turn with the GenAI
 * attributes (`gen_ai.*`, usage). The turn span's traceparent goes to the MCP server (runner_state) and to the
 * provider's CLI (TRACEPARENT), so tool spans and the CLI's own spans join the same trace.
 */
export class TurnTraces {
  private readonly pickups: SpanHandle[] = [];
  private turn: SpanHandle | undefined;
  private parent: SpanHandle | undefined;
  private links: string[] = [];

  constructor(
    private readonly tracing: Tracing,
    private readonly provider: string,
    private readonly model: string | undefined,
    /** the model-runtime generation the turn runs with (`pincer.model_runtime.generation`) */
    private readonly modelGeneration?: number,
  ) {}

  static off(): TurnTraces {
    return new TurnTraces(NO_TRACING, '', undefined);
  }

  /** Pickup spans for newly claimed messages; the turn continues the trace of `routingId` (the answered message). */
  picked(messages: FormattableMessage[], routingId: string | null): void {
    if (!this.tracing.enabled) return;
    for (const { row } of messages) {
      if (!row.trace_context) continue;
      const pickup = this.tracing.start('pincer.pickup', {
        parent: row.trace_context,
        kind: 'consumer',
        startTime: Date.parse(row.timestamp) || undefined,
        attributes: { 'pincer.message.kind': row.kind, 'pincer.message.seq': row.seq, 'pincer.message.tries': row.tries },
      });
      pickup.end();
      this.pickups.push(pickup);
      if (row.id === routingId || !this.parent) this.parent = pickup;
    }
    this.links = this.pickups.filter((p) => p !== this.parent).flatMap((p) => (p.traceparent ? [p.traceparent] : []));
  }

  /** The traceparent of the turn in flight, started on first use. */
  get traceparent(): string | undefined {
    return this.current()?.traceparent;
  }

  /** A result ended the turn: record what it cost; a later result is another turn. */
  result(usage: TurnUsage | undefined): void {
    const turn = this.current();
    if (!turn) return;
    if (usage) {
      turn.setAttributes({
        'gen_ai.response.model': usage.model,
        'gen_ai.usage.input_tokens': usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
        'gen_ai.usage.output_tokens': usage.outputTokens,
        'pincer.usage.cache_read_tokens': usage.cacheReadTokens,
        'pincer.usage.cache_write_tokens': usage.cacheWriteTokens,
        'pincer.usage.cost_usd': usage.costUsd,
      });
    }
    turn.end();
    this.turn = undefined;
  }

  /** The turn failed (or the runner stopped it): end it with the error. */
  fail(error: string): void {
    this.turn?.end(error);
    this.turn = undefined;
  }

  /** End whatever is still open (a query that ended without another result). */
  finish(): void {
    this.turn?.end();
    this.turn = undefined;
  }

  private current(): SpanHandle | undefined {
    if (!this.tracing.enabled || !this.parent) return undefined;
    this.turn ??= this.tracing.start(`invoke_agent ${this.provider}`, {
      parent: this.parent,
      kind: 'client',
      links: this.links,
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.provider.name': this.provider,
        'gen_ai.agent.name': this.provider,
        'gen_ai.request.model': this.model,
        'pincer.model_runtime.generation': this.modelGeneration,
      },
    });
    return this.turn;
  }
}
