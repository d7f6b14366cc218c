import { randomUUID } from '../shared/uuid.js';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { AsyncQueue } from '../shared/async-queue.js';
import { ProviderError } from './registry.js';
import { turnUsageSchema } from '../shared/usage.js';
import type { AgentProvider, AgentQuery, ContentBlock, ProviderConfig, ProviderEvent, QueryInput, TurnUsage } from './types.js';
import { rawSetting } from '../shared/settings-load.js';

/**
 * The deterministic provider: answers the query and each push with one `result` whose text is `echo: ` and
 * the prompt text it received. For tests and for trying Pincer without a key.
 *
 * Test controls, read from the provider's env:
 * - MOCK_DELAY_MS: wait this long before each answer (abortable);
 * - MOCK_RECORD_FILE: append one JSON line per query and per push with what the provider was given;
 * - MOCK_NATIVE_MEDIA: `image,pdf` makes it declare native media like Claude (default: none, like Codex/OpenCode);
 * - MOCK_LINGER_MS: after its input ends, keep the event stream open this long (an SDK slow to shut down), so tests
 *   can kill a runner between the last answer and the end of the query;
 * - MOCK_USAGE: JSON fields that replace the usage every answer reports (see `mockUsage` for the defaults);
 * - a prompt containing `mock:error` yields a retryable `error` event, `mock:fatal` one another try cannot fix;
 *   `mock:crash` makes the event stream throw.
 */
export class MockProvider implements AgentProvider {
  readonly nativeSlashCommands = ['/compact'] as const;
  readonly nativeMedia: readonly ('image' | 'pdf')[];
  private readonly delayMs: number;
  private readonly lingerMs: number;
  private readonly recordFile: string | undefined;
  private readonly usage: Partial<TurnUsage>;
  private readonly model: string;

  constructor(config: ProviderConfig) {
    this.usage = parseUsageOverride(rawSetting(config.env, 'MOCK_USAGE'));
    this.model = config.model ?? 'mock';
    this.delayMs = Number(rawSetting(config.env, 'MOCK_DELAY_MS') ?? 0) || 0;
    this.lingerMs = Number(rawSetting(config.env, 'MOCK_LINGER_MS') ?? 0) || 0;
    this.recordFile = rawSetting(config.env, 'MOCK_RECORD_FILE') || undefined;
    this.nativeMedia = (rawSetting(config.env, 'MOCK_NATIVE_MEDIA') ?? '')
      .split(',')
      .filter((kind): kind is 'image' | 'pdf' => kind === 'image' || kind === 'pdf');
  }

  query(input: QueryInput): AgentQuery {
    const prompts = new AsyncQueue<string>();
    const abort = new AbortController();
    prompts.push(promptText(input.prompt));
    this.record({
      type: 'query',
      prompt: input.prompt,
      sessionId: input.sessionId,
      resumeAt: input.resumeAt,
      systemPrompt: input.systemPrompt,
      cwd: input.cwd,
      mcpServers: input.mcpServers,
      additionalDirectories: input.additionalDirectories,
    });
    return {
      push: (message) => {
        this.record({ type: 'push', prompt: message });
        prompts.push(message);
      },
      end: () => prompts.end(),
      abort: () => {
        abort.abort();
        prompts.end();
      },
      events: this.run(input.sessionId, prompts, abort.signal),
    };
  }

  private async *run(sessionId: string | undefined, prompts: AsyncQueue<string>, signal: AbortSignal): AsyncIterable<ProviderEvent> {
    yield { type: 'init', sessionId: sessionId ?? `mock-${randomUUID()}` };
    let turn = 0;
    for await (const text of prompts) {
      if (this.delayMs > 0) {
        try {
          await sleep(this.delayMs, undefined, { signal });
        } catch {
          // aborted: the turn ends without an answer, as a real provider's would
          return;
        }
      }
      if (signal.aborted) return;
      if (text.includes('mock:crash')) throw new Error('mock provider crashed (requested by the prompt)');
      if (text.includes('mock:error')) {
        yield { type: 'error', message: 'mock error (requested by the prompt)', retryable: true, classification: 'mock' };
        return;
      }
      if (text.includes('mock:fatal')) {
        yield { type: 'error', message: 'mock error that another try cannot fix (requested by the prompt)', retryable: false, classification: 'mock' };
        return;
      }
      turn += 1;
      const answer = `echo: ${text}`;
      const usage = { ...mockUsage(text, answer, this.model, this.delayMs), ...this.usage };
      yield { type: 'result', text: answer, resumeAt: `mock-turn-${turn}`, usage };
    }
    if (this.lingerMs > 0) await sleep(this.lingerMs, undefined, { signal }).catch(() => undefined); // aborted: the linger ends early
  }

  private record(entry: Record<string, unknown>): void {
    if (this.recordFile) fs.appendFileSync(this.recordFile, JSON.stringify(entry) + '\n');
  }
}

function promptText(prompt: string | ContentBlock[]): string {
  if (typeof prompt === 'string') return prompt;
  return prompt.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
}

/**
 * The usage the mock reports, deterministic so tests can predict it: one input token per prompt character, one
 * output token per answer character, no cache, $1 per million input and $2 per million output tokens, and the
 * configured delay as the duration.
 */
export function mockUsage(prompt: string, answer: string, model: string, delayMs: number): TurnUsage {
  const inputTokens = prompt.length;
  const outputTokens = answer.length;
  return {
    model,
    inputTokens,
    outputTokens,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costUsd: (inputTokens + 2 * outputTokens) / 1_000_000,
    durationMs: delayMs,
  };
}

function parseUsageOverride(raw: string | undefined): Partial<TurnUsage> {
  if (!raw) return {};
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    // a prompt that is not JSON has no mock directives
    value = undefined;
  }
  const parsed = turnUsageSchema.partial().safeParse(value);
  if (!parsed.success) throw new ProviderError('config', `MOCK_USAGE must be a JSON object of usage fields (${parsed.error.issues[0]?.message}), got: ${raw}`);
  return parsed.data;
}
