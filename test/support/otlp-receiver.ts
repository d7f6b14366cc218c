import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback OTLP/HTTP trace receiver (JSON encoding, `POST /v1/traces`), for tests of tracing: it keeps every span
 * it is sent with its service name, and counts requests it could not read (another encoding) so a test can insist on
 * none. Answers 200 with an empty partial-success body, as a collector does.
 */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  status: number;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:PORT`, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** requests whose body was not OTLP JSON. */
  unreadable: number;
  /** spans by trace id. */
  traces(): Map<string, ReceivedSpan[]>;
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const receiver: OtlpReceiver = {
    url: '',
    spans,
    unreadable: 0,
    traces: () => {
      const byTrace = new Map<string, ReceivedSpan[]>();
      for (const span of spans) byTrace.set(span.traceId, [...(byTrace.get(span.traceId) ?? []), span]);
      return byTrace;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        if (req.url !== '/v1/traces' || !String(req.headers['content-type']).includes('json')) throw new Error('not OTLP JSON traces');
        read(JSON.parse(Buffer.concat(chunks).toString('utf8')), spans);
      } catch {
        receiver.unreadable += 1;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  server.keepAliveTimeout = 100;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return receiver;
}

function read(body: { resourceSpans?: unknown[] }, into: ReceivedSpan[]): void {
  for (const resourceSpans of (body.resourceSpans ?? []) as {
    resource?: { attributes?: { key: string; value: AnyValue }[] };
    scopeSpans?: { spans?: Record<string, unknown>[] }[];
  }[]) {
    const resource = attributes(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        into.push({
          service: String(resource['service.name'] ?? ''),
          traceId: String(span.traceId),
          spanId: String(span.spanId),
          parentSpanId: span.parentSpanId ? String(span.parentSpanId) : undefined,
          name: String(span.name),
          kind: Number(span.kind ?? 0),
          attributes: attributes(span.attributes as { key: string; value: AnyValue }[] | undefined),
          status: Number((span.status as { code?: number } | undefined)?.code ?? 0),
        });
      }
    }
  }
}

function attributes(list: { key: string; value: AnyValue }[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue ?? ''));
  }
  return out;
}
