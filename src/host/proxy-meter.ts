import type http from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import zlib from 'node:zlib';
import type { ModelUsage } from '../shared/usage.js';
import { SseLines, UsageReader, type ProxyApi } from './proxy-usage.js';

/**
 * Metering at the credential proxy (docs/security.md "Usage at the proxy"): the key is used here, so here every model
 * call of a session is counted — from the upstream's own usage fields — and refused while its agent group is over
 * budget, whether the session's runner made it or the agent did from its shell.
 */

/** What the proxy asks the host: may this session call now, and what a call used. */
export interface ProxyMeter {
  /** undefined: go ahead; else the refusal the caller is shown (the group is over a budget). */
  refusal(sessionId: string): string | undefined;
  /** A model call starts; returns its id (the call counts from now, with no tokens yet). */
  started(sessionId: string, api: ProxyApi, path: string): string;
  /** What the upstream reported for call `id` (undefined: it reported no usage; the call stays, with no tokens). */
  finished(id: string, usage: ModelUsage | undefined, durationMs: number): void;
}

/** The model-call endpoints (POST): the calls that cost tokens. Anything else is forwarded, not counted. */
export function isModelCall(api: ProxyApi, method: string | undefined, pathname: string): boolean {
  if (method !== 'POST') return false;
  if (api === 'anthropic') return /\/messages$/.test(pathname);
  return /\/(chat\/completions|completions|responses|embeddings)$/.test(pathname);
}

/** Chat and legacy completions: the requests whose stream carries usage only when asked for. */
export function needsUsageOption(api: ProxyApi, pathname: string): boolean {
  return api === 'openai' && /\/(chat\/completions|completions)$/.test(pathname);
}

/** The most of a request body the proxy holds to add the usage option; a larger one is refused (413). */
export const MAX_REWRITTEN_BODY = 64 * 1024 * 1024;

/**
 * An OpenAI Chat/Completions request body with `stream_options.include_usage: true` when it streams: without it the
 * stream carries no usage at all, so an agent could call for free by leaving it out. A body that is not a JSON object
 * is forwarded unchanged (the upstream refuses it, and it costs nothing).
 */
export function withStreamUsage(body: Buffer): Buffer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return body; // not JSON: the upstream answers 400
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return body;
  const request = parsed as Record<string, unknown>;
  if (request.stream !== true) return body;
  const options = typeof request.stream_options === 'object' && request.stream_options !== null ? request.stream_options : {};
  if ((options as Record<string, unknown>).include_usage === true) return body;
  return Buffer.from(JSON.stringify({ ...request, stream_options: { ...options, include_usage: true } }));
}

/** A JSON body larger than this is not parsed for usage (no model API answers with one). */
const MAX_JSON_BODY = 32 * 1024 * 1024;

/**
 * Reads a copy of an upstream response for its usage, as it passes to the client: decompressed when the upstream
 * compressed it anyway (the proxy asks for `identity`), as SSE or as one JSON body. `end()` gives what it found.
 */
export class ResponseUsageTap {
  private readonly reader: UsageReader;
  private readonly sse: SseLines | undefined;
  private readonly text = new StringDecoder('utf8');
  private readonly json: Buffer[] = [];
  private jsonBytes = 0;
  private readonly decoder: zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress | undefined;
  private readonly done: Promise<void>;
  /** false: a body the tap cannot read (an encoding zlib does not know); the call counts with no tokens. */
  readonly readable: boolean;

  constructor(api: ProxyApi, res: http.IncomingMessage) {
    this.reader = new UsageReader(api);
    const type = String(res.headers['content-type'] ?? '');
    this.sse = type.includes('text/event-stream') ? new SseLines((value) => this.reader.absorb(value)) : undefined;
    const encoding = String(res.headers['content-encoding'] ?? 'identity')
      .trim()
      .toLowerCase();
    this.decoder = DECODERS[encoding]?.();
    this.readable = encoding === 'identity' || this.decoder !== undefined;
    if (!this.decoder) {
      this.done = Promise.resolve();
      return;
    }
    this.decoder.on('data', (chunk: Buffer) => this.take(chunk));
    this.done = new Promise((resolve) => {
      this.decoder!.once('end', resolve);
      this.decoder!.once('error', () => resolve()); // a broken compressed body: what was read so far counts
    });
  }

  write(chunk: Buffer): void {
    if (!this.readable) return;
    if (this.decoder) this.decoder.write(chunk);
    else this.take(chunk);
  }

  async end(): Promise<ModelUsage | undefined> {
    if (this.decoder) {
      this.decoder.end();
      await this.done;
    }
    if (this.sse) {
      this.sse.push(this.text.end());
      this.sse.end();
    } else if (this.jsonBytes > 0 && this.jsonBytes <= MAX_JSON_BODY) {
      try {
        this.reader.absorb(JSON.parse(Buffer.concat(this.json).toString('utf8')));
      } catch {
        // not JSON (an HTML error page, a cut body): no usage reported
      }
    }
    return this.reader.result();
  }

  private take(chunk: Buffer): void {
    if (this.sse) return this.sse.push(this.text.write(chunk));
    this.jsonBytes += chunk.length;
    if (this.jsonBytes <= MAX_JSON_BODY) this.json.push(chunk);
    else this.json.length = 0;
  }
}

const DECODERS: Record<string, () => zlib.Gunzip | zlib.Inflate | zlib.BrotliDecompress> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/** How long a metered call's upstream is still read after its client went away: its usage comes at the very end. */
export const DRAIN_AFTER_CLIENT_MS = 5000;

/** How much of a request body is kept to find its `model` (the answer names none: some compatible servers). */
const REQUEST_PREFIX = 64 * 1024;

/** The `model` a request body asks for (its first string-valued `"model"` key), from the body's first bytes. */
export function requestedModel(prefix: string): string | undefined {
  return /"model"\s*:\s*"([^"\\]{1,200})"/.exec(prefix)?.[1];
}

/** One forwarded model call: counted once, with what its upstream reported, however it ends. */
export class MeteredCall {
  private tap: ResponseUsageTap | undefined;
  private done = false;
  private readonly startedAt = Date.now();
  private request = '';

  constructor(
    private readonly meter: ProxyMeter,
    private readonly id: string,
    private readonly api: ProxyApi,
  ) {}

  /** A chunk of the request body on its way upstream (its first bytes name the model). */
  sent(chunk: Buffer): void {
    if (this.request.length < REQUEST_PREFIX) this.request += chunk.subarray(0, REQUEST_PREFIX - this.request.length).toString('utf8');
  }

  /** The upstream answered: read a copy of its body as it passes. */
  response(res: http.IncomingMessage): void {
    const tap = new ResponseUsageTap(this.api, res);
    this.tap = tap;
    res.on('data', (chunk: Buffer) => tap.write(chunk));
    res.once('end', () => this.finish());
    res.once('close', () => this.finish()); // cut short: what was read by then counts
  }

  /** The call ended (answered, failed, or cut): record it, once. */
  finish(): void {
    if (this.done) return;
    this.done = true;
    const duration = Date.now() - this.startedAt;
    void (this.tap ? this.tap.end() : Promise.resolve(undefined)).then((usage) => {
      if (usage?.model === 'unknown') usage.model = requestedModel(this.request) ?? 'unknown';
      this.meter.finished(this.id, usage, duration);
    });
  }
}
