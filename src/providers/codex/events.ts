import type { ThreadEvent, ThreadItem, Usage } from '@openai/codex-sdk';
import type { TurnUsage } from '../../shared/usage.js';
import type { ModelDeadline } from '../deadline.js';
import type { ProviderEvent } from '../types.js';

/**
 * Translates one Codex turn's `ThreadEvent`s: `thread.started` → `init`; the last
 * `agent_message` → the turn's result text; `turn.failed` and stream `error` → `error`; tool items stop the model
 * deadline while they run; non-fatal `error` items and tool activity → `progress`.
 */
export class CodexTurn {
  /** the text of the last agent message of this turn. */
  text = '';
  completed = false;
  failure: string | null = null;
  threadId: string | null = null;
  /** the token counts `turn.completed` reported. */
  usage: Usage | null = null;
  /** tool items started and not yet completed. */
  private readonly toolsStarted = new Set<string>();

  constructor(readonly deadline: ModelDeadline) {}

  /** The provider events for one thread event (`init` is left to the provider: once per query). */
  translate(event: ThreadEvent): ProviderEvent[] {
    switch (event.type) {
      case 'thread.started':
        this.threadId = event.thread_id;
        return [];
      case 'turn.started':
        this.deadline.touch();
        return [];
      case 'item.started':
        if (isTool(event.item)) {
          this.deadline.toolStarted();
          this.toolsStarted.add(event.item.id);
          return [{ type: 'progress', message: `tool started: ${describeItem(event.item)}` }, toolStart(event.item)];
        }
        this.deadline.touch();
        return [];
      case 'item.updated':
        this.deadline.touch();
        return [];
      case 'item.completed':
        return this.itemCompleted(event.item);
      case 'turn.completed':
        this.completed = true;
        this.usage = event.usage;
        return [];
      case 'turn.failed':
        this.failure = event.error.message;
        return [];
      case 'error':
        this.failure = event.message;
        return [];
    }
  }

  private itemCompleted(item: ThreadItem): ProviderEvent[] {
    if (isTool(item)) {
      this.deadline.toolFinished();
      // a file change is only reported once applied: its start and end come together
      const started = this.toolsStarted.delete(item.id) ? [] : [toolStart(item)];
      const ok = !('status' in item) || item.status === 'completed';
      return [{ type: 'progress', message: `tool finished: ${describeItem(item)}` }, ...started, { type: 'tool', phase: 'end', id: item.id, ok }];
    }
    if (item.type === 'error') {
      // Non-fatal (e.g. "Model metadata for `x` not found", "Reconnecting... 2/5"): no model progress.
      return [{ type: 'progress', message: `codex: ${item.message}` }];
    }
    this.deadline.touch();
    if (item.type === 'agent_message' && item.text) this.text = item.text;
    return [];
  }
}

/**
 * A completed turn's usage in Pincer's shape. Codex counts cached input inside `input_tokens` (as the Responses API
 * does), so fresh input is the difference. Codex reports no cost: the host prices it from its table.
 */
export function codexTurnUsage(usage: Usage | null, model: string | undefined, durationMs: number): TurnUsage | undefined {
  if (!usage) return undefined;
  const cached = usage.cached_input_tokens ?? 0;
  return {
    model: model ?? 'codex',
    inputTokens: Math.max(0, usage.input_tokens - cached),
    outputTokens: usage.output_tokens,
    cacheReadTokens: cached,
    cacheWriteTokens: usage.cache_write_input_tokens ?? 0,
    durationMs,
  };
}

function isTool(item: ThreadItem): boolean {
  return item.type === 'mcp_tool_call' || item.type === 'command_execution' || item.type === 'file_change' || item.type === 'web_search';
}

/** A tool item as a started tool: what it is called and its one argument worth showing. */
function toolStart(item: ThreadItem): ProviderEvent {
  switch (item.type) {
    case 'mcp_tool_call':
      return { type: 'tool', phase: 'start', id: item.id, name: `${item.server}/${item.tool}`, args: item.arguments };
    case 'command_execution':
      return { type: 'tool', phase: 'start', id: item.id, name: 'shell', args: item.command };
    case 'file_change':
      return { type: 'tool', phase: 'start', id: item.id, name: 'edit', args: item.changes.map((c) => `${c.kind} ${c.path}`).join(', ') };
    case 'web_search':
      return { type: 'tool', phase: 'start', id: item.id, name: 'web_search', args: item.query };
    default:
      return { type: 'tool', phase: 'start', id: item.id, name: item.type };
  }
}

function describeItem(item: ThreadItem): string {
  switch (item.type) {
    case 'mcp_tool_call':
      return `${item.server}/${item.tool} (${item.status})`;
    case 'command_execution':
      return `command (${item.status})`;
    default:
      return item.type;
  }
}

/** A classification for `error` events from a Codex failure message. */
export function classifyCodexError(message: string): { classification: string; retryable: boolean } {
  if (/\b401\b|unauthori[sz]ed|invalid api key|missing.*api key/i.test(message)) return { classification: 'auth', retryable: false };
  if (/\b429\b|rate limit|quota/i.test(message)) return { classification: 'quota', retryable: true };
  if (/\b5\d\d\b|internal server error|bad gateway|unavailable|high demand/i.test(message)) return { classification: 'api', retryable: true };
  if (/connect|stream disconnected|timed? ?out|error sending request/i.test(message)) return { classification: 'transport', retryable: true };
  return { classification: 'codex', retryable: true };
}
