import type { ModelUsage } from '../shared/usage.js';

/**
 * The usage an upstream reports in its own responses, read by the credential proxy (docs/security.md "Usage at the
 * proxy"): what a model call cost is what the API that ran it says, not what the session's runner writes down.
 *
 * - Anthropic Messages: a JSON body's `usage`; in a stream, `message_start`'s `message.usage` and then each
 *   `message_delta`'s `usage` (cumulative: a field given again replaces the earlier value).
 * - OpenAI Chat Completions: a JSON body's `usage`; in a stream, the chunk that carries `usage` (the last one, only
 *   when the request asked for it with `stream_options.include_usage` — the proxy adds that, see proxy-meter.ts).
 * - OpenAI Responses: a JSON body's `usage`; in a stream, the `response` of `response.completed` (or `.incomplete`,
 *   `.failed`).
 *
 * Token counts come out as the ledger counts them: input without cache reads and cache writes.
 */
export type ProxyApi = 'anthropic' | 'openai';

/** The most one call is counted for, per field (the ledger's own cap of one turn). */
const CALL_TOKENS_MAX = 10_000_000_000;

export class UsageReader {
  private model: string | undefined;
  /** the raw fields seen so far, by the API's names (a later value of a field replaces the earlier one). */
  private readonly fields = new Map<string, number>();
  private seen = false;

  constructor(private readonly api: ProxyApi) {}

  /** One parsed JSON body, or one event's data of a stream. */
  absorb(value: unknown): void {
    if (!isObject(value)) return;
    if (value.type === 'message_start') return this.absorb(value.message);
    if (typeof value.type === 'string' && value.type.startsWith('response.') && isObject(value.response)) return this.absorb(value.response);
    if (typeof value.model === 'string' && value.model.length > 0 && value.model.length <= 200) this.model = value.model;
    if (!isObject(value.usage)) return;
    this.seen = true;
    const usage = value.usage;
    for (const name of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens', 'prompt_tokens', 'completion_tokens']) {
      const n = count(usage[name]);
      if (n !== undefined) this.fields.set(name, n);
    }
    const details = isObject(usage.prompt_tokens_details)
      ? usage.prompt_tokens_details
      : isObject(usage.input_tokens_details)
        ? usage.input_tokens_details
        : undefined;
    const cached = details && count(details.cached_tokens);
    if (cached !== undefined) this.fields.set('cached_tokens', cached);
  }

  /** What the call used, or undefined when the upstream reported no usage at all (an error, a cut stream). */
  result(): ModelUsage | undefined {
    if (!this.seen) return undefined;
    const f = (name: string): number => this.fields.get(name) ?? 0;
    const model = this.model ?? 'unknown';
    if (this.api === 'anthropic') {
      return {
        model,
        inputTokens: f('input_tokens'),
        outputTokens: f('output_tokens'),
        cacheReadTokens: f('cache_read_input_tokens'),
        cacheWriteTokens: f('cache_creation_input_tokens'),
      };
    }
    // OpenAI counts cached prompt tokens inside the input (Chat: prompt_tokens, Responses: input_tokens)
    const input = this.fields.has('prompt_tokens') ? f('prompt_tokens') : f('input_tokens');
    const output = this.fields.has('completion_tokens') ? f('completion_tokens') : f('output_tokens');
    const cached = Math.min(f('cached_tokens'), input);
    return { model, inputTokens: input - cached, outputTokens: output, cacheReadTokens: cached, cacheWriteTokens: 0 };
  }
}

/**
 * Server-sent events, fed in chunks: each `data:` line's JSON goes to `onData`. Lines longer than `maxLine` are
 * skipped (no usage event is that long; a runaway line must not grow the proxy's memory).
 */
export class SseLines {
  private pending = '';
  private skipping = false;

  constructor(
    private readonly onData: (value: unknown) => void,
    private readonly maxLine = 8 * 1024 * 1024,
  ) {}

  push(text: string): void {
    let start = 0;
    for (let nl = text.indexOf('\n', start); nl !== -1; nl = text.indexOf('\n', start)) {
      const line = this.pending + text.slice(start, nl);
      this.pending = '';
      start = nl + 1;
      if (this.skipping) this.skipping = false;
      else this.line(line);
    }
    if (this.skipping) return;
    this.pending += text.slice(start);
    if (this.pending.length > this.maxLine) {
      this.pending = '';
      this.skipping = true;
    }
  }

  end(): void {
    if (!this.skipping && this.pending) this.line(this.pending);
    this.pending = '';
  }

  private line(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!line.startsWith('data:')) return;
    const data = line.slice(5).trimStart();
    if (!data.startsWith('{') || !data.includes('"usage"')) return; // only events that can carry usage are parsed
    try {
      this.onData(JSON.parse(data));
    } catch {
      // not JSON: an event no API of ours sends; nothing to count in it
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function count(value: unknown): number | undefined {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return undefined;
  return Math.min(Math.floor(value), CALL_TOKENS_MAX);
}
