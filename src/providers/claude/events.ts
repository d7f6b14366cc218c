import type { SDKMessage, SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from '../../shared/log.js';
import type { ProviderEvent } from '../types.js';
import { classifyApiError, classifyErrorText, ClaudeProviderError, type ClaudeErrorCode } from './errors.js';
import { ClaudeUsageMeter } from './usage.js';

/**
 * Claude's events translated, one SDK message at a time:
 * - system/init → `init` (once per query; Claude Code repeats it every turn);
 * - result → `result` with what the turn cost (usage.ts) and the uuid of the last entry of the conversation seen (an assistant message, a tool result,
 *   after `/compact` the summary) as `resumeAt`: resuming at an older entry would fail once the conversation is
 *   compacted ("No message found"); an `is_error` result → `error`;
 * - system/api_retry → retryable `error` classified by the API error (Claude Code would retry; the host does);
 * - rate_limit_event with status `rejected` → `error` classified `quota`;
 * - system/task_notification → `progress`;
 * - system/compact_boundary of a `/compact` → its otherwise empty result says "Conversation compacted.";
 * - everything else → logged only.
 */
export class ClaudeEventTranslator {
  private announced = false;
  /** the last top-level transcript entry seen: where the next query resumes. */
  private lastEntryUuid: string | undefined;
  /** a manual compaction (`/compact`) happened in the current turn. */
  private compacted = false;
  /** the session's model (system/init), which names a turn's usage. */
  private model: string | undefined;
  private readonly usage: ClaudeUsageMeter;

  constructor(
    private readonly log: Logger,
    /** where the model API is (ANTHROPIC_BASE_URL), named in transport errors. */
    private readonly apiUrl: string | undefined,
    /** measures each turn's usage (see usage.ts). */
    usage = new ClaudeUsageMeter(undefined),
  ) {
    this.usage = usage;
  }

  translate(message: SDKMessage): ProviderEvent[] {
    switch (message.type) {
      case 'system':
        return this.system(message);
      case 'assistant':
        if (message.parent_tool_use_id === null && !message.error) this.lastEntryUuid = message.uuid;
        this.log.debug(`assistant: ${message.message.content.map((block) => block.type).join(', ')}`);
        return toolStarts(message.message.content);
      case 'user':
        // tool results, and the summary a compaction leaves: entries of the conversation too
        if (message.parent_tool_use_id === null && message.uuid) this.lastEntryUuid = message.uuid;
        return Array.isArray(message.message.content) ? toolEnds(message.message.content) : [];
      case 'result':
        return [this.result(message)];
      case 'rate_limit_event': {
        const info = message.rate_limit_info;
        if (info.status !== 'rejected') {
          this.log.debug(`rate limit ${info.status} (${info.rateLimitType ?? 'unknown window'})`);
          return [];
        }
        const resets = info.resetsAt ? `; resets at ${new Date(info.resetsAt * 1000).toISOString()}` : '';
        return [errorEvent(new ClaudeProviderError('quota', `usage limit reached (${info.rateLimitType ?? 'unknown window'})${resets}`))];
      }
      case 'stream_event':
        return [];
      default:
        this.log.debug(`${message.type}${'subtype' in message ? `/${String(message.subtype)}` : ''}`);
        return [];
    }
  }

  private system(message: Extract<SDKMessage, { type: 'system' }>): ProviderEvent[] {
    if (message.subtype === 'init') {
      this.model = message.model;
      for (const server of message.mcp_servers) {
        if (server.status !== 'connected') this.log.warn(`MCP server ${server.name}: ${server.status}`);
      }
      if (this.announced) return [];
      this.announced = true;
      this.log.info(`session ${message.session_id} (model ${message.model}, ${message.tools.length} tools)`);
      return [{ type: 'init', sessionId: message.session_id }];
    }
    if (message.subtype === 'api_retry') {
      const code = classifyApiError(message.error, message.error_status);
      const what = message.error_status === null ? `no answer from ${this.apiUrl ?? 'the model API'}` : `HTTP ${message.error_status}`;
      return [
        errorEvent(
          new ClaudeProviderError(code, `model API request failed (${what}, ${message.error}); attempt ${message.attempt} of ${message.max_retries + 1}`),
        ),
      ];
    }
    if (message.subtype === 'compact_boundary') {
      this.log.info(`conversation compacted (${message.compact_metadata.trigger}, ${message.compact_metadata.pre_tokens} tokens before)`);
      if (message.compact_metadata.trigger === 'manual') this.compacted = true;
      this.lastEntryUuid = message.uuid;
      return [];
    }
    if (message.subtype === 'task_notification') {
      return [{ type: 'progress', message: `task ${message.task_id} ${message.status}: ${message.summary}` }];
    }
    this.log.debug(`system/${message.subtype}`);
    return [];
  }

  private result(message: SDKResultMessage): ProviderEvent {
    const compacted = this.compacted;
    this.compacted = false;
    // Every result moves the running totals, failed turns too: measure each so the next turn's share is right.
    const usage = this.usage.turn(message, this.model);
    if (message.subtype === 'success' && !message.is_error) {
      // `/compact` answers with no text; say that it happened rather than leave the user without a reply.
      const text = message.result || (compacted ? 'Conversation compacted.' : null);
      return { type: 'result', text, resumeAt: this.lastEntryUuid, usage };
    }
    if (message.subtype === 'success') {
      // An API error ends the turn as an `is_error` result whose text Claude Code wrote (`API Error: 500 …`).
      const code: ClaudeErrorCode = message.api_error_status ? classifyApiError(undefined, message.api_error_status) : classifyErrorText(message.result);
      return errorEvent(new ClaudeProviderError(code, message.result || 'Claude Code reported an error'));
    }
    const detail = message.errors.join('; ') || message.subtype;
    return errorEvent(new ClaudeProviderError('execution', `Claude Code ended the turn: ${detail}`));
  }
}

/** The tool calls an assistant message makes (`tool_use` blocks, MCP tools' too), each a started tool. */
function toolStarts(content: readonly { type: string }[]): ProviderEvent[] {
  return content.flatMap((block): ProviderEvent[] => {
    const b = block as { type: string; id?: unknown; name?: unknown; input?: unknown };
    return b.type === 'tool_use' && typeof b.id === 'string' && typeof b.name === 'string'
      ? [{ type: 'tool', phase: 'start', id: b.id, name: b.name, args: b.input }]
      : [];
  });
}

/** The tool results a user message carries, each an ended tool (`is_error`: it failed). */
function toolEnds(content: readonly unknown[]): ProviderEvent[] {
  return content.flatMap((block): ProviderEvent[] => {
    const b = block as { type?: unknown; tool_use_id?: unknown; is_error?: unknown };
    return b.type === 'tool_result' && typeof b.tool_use_id === 'string' ? [{ type: 'tool', phase: 'end', id: b.tool_use_id, ok: b.is_error !== true }] : [];
  });
}

export function errorEvent(error: ClaudeProviderError): ProviderEvent {
  return { type: 'error', message: error.message, retryable: error.retryable, classification: error.reason };
}
