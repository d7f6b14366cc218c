import { rawSetting } from './settings-load.js';
/**
 * OpenTelemetry traces, on only when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set;
 * otherwise every call is a no-op and no OpenTelemetry module is even loaded. One trace per inbound message: the
 * host starts it when a channel hands the message over, and the context travels as a W3C `traceparent` string — in
 * the message row to the runner, in `runner_state` to the MCP server, in TRACEPARENT to the agent's CLI — so every
 * process parents its spans on the one before, and a trace has one root.
 */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanHandle {
  /** the W3C traceparent of this span, for a child in another process; undefined when tracing is off. */
  readonly traceparent: string | undefined;
  setAttributes(attributes: SpanAttributes): void;
  /** end the span; with `error`, its status is an error with that message. */
  end(error?: string): void;
}

export interface SpanOptions {
  /** the parent: a traceparent string (from a row or the environment) or a span of this process. */
  parent?: string | SpanHandle | null;
  attributes?: SpanAttributes;
  kind?: 'internal' | 'server' | 'client' | 'consumer' | 'producer';
  /** ms since the epoch, for a span that began before it was known (the wait in a queue). */
  startTime?: number;
  /** other traces this span belongs to as well (a batch of several messages). */
  links?: string[];
}

export interface Tracing {
  readonly enabled: boolean;
  start(name: string, options?: SpanOptions): SpanHandle;
  /** export what has ended so far (before a short-lived process exits). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const NO_SPAN: SpanHandle = { traceparent: undefined, setAttributes: () => undefined, end: () => undefined };

export const NO_TRACING: Tracing = {
  enabled: false,
  start: () => NO_SPAN,
  flush: async () => undefined,
  shutdown: async () => undefined,
};

/** Whether `env` turns tracing on. */
export function tracingConfigured(env: NodeJS.ProcessEnv | Record<string, string | undefined>): boolean {
  return (
    Boolean(rawSetting(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') || rawSetting(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')) &&
    rawSetting(env, 'OTEL_TRACES_EXPORTER') !== 'none' &&
    rawSetting(env, 'OTEL_SDK_DISABLED') !== 'true'
  );
}

/** The OTLP/HTTP URL spans go to: the traces endpoint, else `<endpoint>/v1/traces`. */
export function tracesEndpoint(env: NodeJS.ProcessEnv | Record<string, string | undefined>): string {
  return rawSetting(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') || `${String(rawSetting(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')).replace(/\/$/, '')}/v1/traces`;
}

/**
 * Tracing for `service` (`pincer-host`, `pincer-runner`, `pincer-mcp`), exporting OTLP/HTTP (JSON) to the configured
 * endpoint. `immediate` exports each span as it ends (the MCP server, which may be killed between calls); otherwise
 * spans are batched.
 */
export async function startTracing(service: string, env: NodeJS.ProcessEnv, options: { immediate?: boolean } = {}): Promise<Tracing> {
  if (!tracingConfigured(env)) return NO_TRACING;
  const [api, base, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const url = tracesEndpoint(env);
  const exporter = new OTLPTraceExporter({ url });
  const processor = options.immediate ? new base.SimpleSpanProcessor(exporter) : new base.BatchSpanProcessor(exporter, { scheduledDelayMillis: 500 });
  const provider = new base.BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [processor],
  });
  const tracer = provider.getTracer('pincer');
  const kinds = {
    internal: api.SpanKind.INTERNAL,
    server: api.SpanKind.SERVER,
    client: api.SpanKind.CLIENT,
    consumer: api.SpanKind.CONSUMER,
    producer: api.SpanKind.PRODUCER,
  };
  const contextOf = (parent: SpanOptions['parent']): import('@opentelemetry/api').Context => {
    const root = api.ROOT_CONTEXT;
    if (!parent) return root;
    const spanContext = typeof parent === 'string' ? parseTraceparent(parent) : parent.traceparent ? parseTraceparent(parent.traceparent) : undefined;
    return spanContext ? api.trace.setSpanContext(root, { ...spanContext, isRemote: typeof parent === 'string' }) : root;
  };
  return {
    enabled: true,
    start(name, options = {}) {
      const links = (options.links ?? []).flatMap((link) => {
        const context = parseTraceparent(link);
        return context ? [{ context }] : [];
      });
      const span = tracer.startSpan(
        name,
        { kind: kinds[options.kind ?? 'internal'], attributes: clean(options.attributes), startTime: options.startTime, links },
        contextOf(options.parent),
      );
      const context = span.spanContext();
      return {
        traceparent: `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`,
        setAttributes: (attributes) => span.setAttributes(clean(attributes)),
        end: (error) => {
          if (error) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
          span.end();
        },
      };
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

/** `00-<32 hex trace id>-<16 hex span id>-<2 hex flags>`, or undefined when `value` is not one. */
export function parseTraceparent(value: string): { traceId: string; spanId: string; traceFlags: number } | undefined {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value.trim());
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return { traceId: match[1]!, spanId: match[2]!, traceFlags: parseInt(match[3]!, 16) };
}

function clean(attributes: SpanAttributes | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(attributes ?? {})) if (value !== undefined) out[key] = value;
  return out;
}
