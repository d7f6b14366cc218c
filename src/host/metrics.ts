import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DeliveryObserver } from './session/delivery.js';
import { BoundedLabel } from './metric-labels.js';
import type { CollectedTurn } from './usage/ledger.js';

/**
 * The host's Prometheus metrics, in a registry of their own (never prom-client's global one): `pincer_` names, base
 * units (seconds, dollars), `_total` counters, and labels with few values — model, provider, channel, state — never a
 * session or message id. Served by `GET /metrics`; the gauges are read from the host when scraped.
 */
export interface HostGaugeSource {
  /** runners by state (`starting`, `idle`, `busy`, `waiting_user`, `stopping`). */
  runnersByState(): Record<string, number>;
  /** messages waiting for or in work, over all sessions. */
  pendingMessages(): number;
}

/** Seconds: from a few milliseconds (an idle runner's pickup) to minutes (a long agent turn). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export class HostMetrics {
  readonly registry = new Registry();
  private source: HostGaugeSource | undefined;
  readonly pickupLatency: Histogram<string>;
  readonly turnDuration: Histogram<'provider'>;
  readonly tokens: Counter<'model' | 'type'>;
  /** model and provider names come from agent-written rows: their label values are bounded (metric-labels.ts). */
  private readonly modelLabels = new BoundedLabel();
  private readonly providerLabels = new BoundedLabel();
  readonly cost: Counter<'model'>;
  readonly turns: Counter<'provider' | 'model'>;
  readonly deliveries: Counter<'channel'>;
  readonly deliveryFailures: Counter<'channel'>;
  readonly retries: Counter<string>;
  readonly failedMessages: Counter<string>;
  readonly budgetRefusals: Counter<'period' | 'unit'>;
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'pincer_host_' });
    // prom-client's totals of these three are gauges named `…_total`, which Prometheus reserves for counters
    // (`promtool check metrics` rejects them); the per-type gauges beside them sum to the same.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
      this.registry.removeSingleMetric(`pincer_host_${name}`);
    const gauges = (): HostGaugeSource | undefined => this.source;
    new Gauge({
      name: 'pincer_runners',
      help: 'Runners the host supervises, by state.',
      labelNames: ['state'],
      registers,
      collect() {
        this.reset();
        for (const [state, n] of Object.entries(gauges()?.runnersByState() ?? {})) this.set({ state }, n);
      },
    });
    new Gauge({
      name: 'pincer_pending_messages',
      help: 'Inbound messages pending or in work, over all sessions.',
      registers,
      collect() {
        this.set(gauges()?.pendingMessages() ?? 0);
      },
    });
    this.pickupLatency = new Histogram({
      name: 'pincer_pickup_latency_seconds',
      help: "From a message's arrival in its session to the agent's first answer to it.",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.turnDuration = new Histogram({
      name: 'pincer_turn_duration_seconds',
      help: 'Duration of agent turns, as the provider measured them.',
      labelNames: ['provider'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.turns = new Counter({ name: 'pincer_turns_total', help: 'Agent turns recorded in the usage ledger.', labelNames: ['provider', 'model'], registers });
    this.tokens = new Counter({
      name: 'pincer_tokens_total',
      help: 'Tokens used, by model and type (input, output, cache_read, cache_write).',
      labelNames: ['model', 'type'],
      registers,
    });
    this.cost = new Counter({ name: 'pincer_cost_usd_total', help: 'Cost in US dollars, by model (reported or priced).', labelNames: ['model'], registers });
    this.deliveries = new Counter({ name: 'pincer_deliveries_total', help: 'Messages delivered to a channel.', labelNames: ['channel'], registers });
    this.deliveryFailures = new Counter({
      name: 'pincer_delivery_failures_total',
      help: 'Delivery attempts that failed, by channel.',
      labelNames: ['channel'],
      registers,
    });
    this.retries = new Counter({ name: 'pincer_retries_total', help: 'Inbound messages put back to pending for another try.', registers });
    this.failedMessages = new Counter({ name: 'pincer_failed_messages_total', help: 'Inbound messages given up after their last try.', registers });
    this.budgetRefusals = new Counter({
      name: 'pincer_budget_refusals_total',
      help: 'Turns refused because a budget was reached.',
      labelNames: ['period', 'unit'],
      registers,
    });
    this.httpRequests = new Counter({
      name: 'pincer_http_requests_total',
      help: 'HTTP API requests, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
  }

  /** Where the gauges read from at scrape time (the host, once started). */
  attach(source: HostGaugeSource): void {
    this.source = source;
  }

  /** A turn copied into the ledger; the tokens of a hint (its calls were metered at the proxy) are not counted again. */
  turn(turn: CollectedTurn): void {
    const provider = this.providerLabels.of(turn.provider);
    this.turnDuration.observe({ provider }, turn.durationMs / 1000);
    this.turns.inc({ provider, model: this.modelLabels.of(turn.models[0]?.model ?? 'unknown') });
    if (!turn.hint) for (const m of turn.models) this.modelUsage(m);
  }

  /** Tokens and cost of one model's share of a turn, or of one call metered at the credential proxy. */
  modelUsage(m: CollectedTurn['models'][number]): void {
    const model = this.modelLabels.of(m.model);
    this.tokens.inc({ model, type: 'input' }, m.inputTokens);
    this.tokens.inc({ model, type: 'output' }, m.outputTokens);
    this.tokens.inc({ model, type: 'cache_read' }, m.cacheReadTokens);
    this.tokens.inc({ model, type: 'cache_write' }, m.cacheWriteTokens);
    if (m.costUsd !== undefined) this.cost.inc({ model }, m.costUsd);
  }

  /** Counts deliveries and failures by channel, and the pickup latency of the first answer to each message. */
  deliveryObserver(acceptedAt: (sessionId: string, messageId: string) => string | undefined): DeliveryObserver {
    const answered = new Set<string>();
    return {
      delivered: (handle, row) => {
        this.deliveries.inc({ channel: row.channel_type ?? handle.session.channelType });
        if (!row.in_reply_to || answered.has(row.in_reply_to)) return;
        answered.add(row.in_reply_to);
        if (answered.size > 10_000) answered.delete(answered.values().next().value!);
        const accepted = acceptedAt(handle.session.id, row.in_reply_to);
        const latency = accepted ? Date.parse(row.timestamp) - Date.parse(accepted) : NaN;
        if (Number.isFinite(latency) && latency >= 0) this.pickupLatency.observe(latency / 1000);
      },
      failed: (handle, row) => {
        this.deliveryFailures.inc({ channel: row.channel_type ?? handle.session.channelType });
      },
    };
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
