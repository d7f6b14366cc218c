import type { Event as OpenCodeEvent, Message, Part } from '@opencode-ai/sdk';
import { sumUsage, type ModelUsage, type TurnUsage } from '../../shared/usage.js';
import type { ModelDeadline } from '../deadline.js';

/**
 * Reading one OpenCode session's server-sent events: model progress restarts the deadline,
 * running tools stop it, `retry` statuses are remembered (they are what an unreachable server looks like), and
 * `session.idle` / `session.error` end a turn. Events of other sessions (title generation, sub-agents) are ignored.
 */
export type SessionSignal =
  | { type: 'idle' }
  | { type: 'error'; name: string; message: string; classification: string; retryable: boolean }
  | { type: 'progress'; message: string }
  | null;

export class SessionEvents {
  /** the message of the last `retry` status (e.g. "Cannot connect to API"), for the deadline's error. */
  lastRetry: string | null = null;
  private readonly runningTools = new Set<string>();
  /** the assistant messages of this session: only their parts are model progress (not the echo of our prompt). */
  private readonly assistantMessages = new Set<string>();
  /** a retry happened since the last model progress. */
  private retrying = false;

  constructor(
    private readonly sessionId: string,
    private readonly deadline: ModelDeadline,
  ) {}

  /** A new prompt was sent: forget the previous turn's retries and tools. */
  turnStarted(): void {
    this.retrying = false;
    this.runningTools.clear();
  }

  read(event: OpenCodeEvent | { type: string; properties?: Record<string, unknown> }): SessionSignal {
    const typed = event as OpenCodeEvent;
    switch (typed.type) {
      case 'message.updated':
        if (typed.properties.info.sessionID === this.sessionId && typed.properties.info.role === 'assistant') {
          this.assistantMessages.add(typed.properties.info.id);
        }
        return null;
      case 'message.part.updated':
        return this.part(typed.properties.part);
      case 'session.status': {
        if (typed.properties.sessionID !== this.sessionId) return null;
        const status = typed.properties.status;
        if (status.type !== 'retry') return null;
        // The first retry since the last progress starts the model deadline; later retries (OpenCode retries forever)
        // must not restart it. (`busy` is no sign: a fresh server sends it before seconds of plugin loading.)
        if (!this.retrying) this.deadline.touch();
        this.retrying = true;
        this.lastRetry = status.message;
        return { type: 'progress', message: `retry ${status.attempt}: ${status.message}` };
      }
      case 'session.idle':
        return typed.properties.sessionID === this.sessionId ? { type: 'idle' } : null;
      case 'session.error': {
        if (typed.properties.sessionID !== undefined && typed.properties.sessionID !== this.sessionId) return null;
        return describeSessionError(typed.properties.error);
      }
      default:
        // `message.part.delta` (streamed tokens) is newer than the SDK's event types.
        if (event.type === 'message.part.delta' && this.assistantMessages.has(String(event.properties?.messageID))) {
          this.retrying = false;
          this.deadline.touch();
        }
        return null;
    }
  }

  private part(part: Part): SessionSignal {
    if (part.sessionID !== this.sessionId || !this.assistantMessages.has(part.messageID)) return null;
    this.retrying = false;
    if (part.type !== 'tool') {
      this.deadline.touch();
      return null;
    }
    const status = part.state.status;
    if (status === 'running' && !this.runningTools.has(part.callID)) {
      this.runningTools.add(part.callID);
      this.deadline.toolStarted();
      return { type: 'progress', message: `tool started: ${part.tool}` };
    }
    if ((status === 'completed' || status === 'error') && this.runningTools.delete(part.callID)) {
      this.deadline.toolFinished();
      return { type: 'progress', message: `tool finished: ${part.tool} (${status})` };
    }
    this.deadline.touch();
    return null;
  }
}

type SessionErrorPayload = Extract<OpenCodeEvent, { type: 'session.error' }>['properties']['error'];

export function describeSessionError(error: SessionErrorPayload): SessionSignal {
  const name = error?.name ?? 'UnknownError';
  const data = (error?.data ?? {}) as { message?: unknown; statusCode?: unknown; isRetryable?: unknown };
  const message = typeof data.message === 'string' && data.message ? data.message : name;
  if (name === 'ProviderAuthError') return { type: 'error', name, message, classification: 'auth', retryable: false };
  if (name === 'APIError') {
    const status = typeof data.statusCode === 'number' ? data.statusCode : undefined;
    const classification = status === 401 || status === 403 ? 'auth' : status === 429 ? 'quota' : 'api';
    const text = status ? `HTTP ${status}: ${message}` : message;
    // a refused request (4xx but a timeout or a rate limit) fails again as it is; anything else may pass
    const refused = status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
    return { type: 'error', name, message: text, classification, retryable: data.isRetryable === true || !refused };
  }
  return { type: 'error', name, message, classification: 'opencode', retryable: true };
}

/**
 * What the last turn cost: the tokens and cost OpenCode recorded on each assistant message after the last user
 * message (a turn with tool calls has several), by model. OpenCode's cost is 0 for a model without a price in its
 * catalogue: then the cost is left out and the host prices it.
 */
export function lastTurnUsage(messages: { info: Message }[], durationMs: number): TurnUsage | undefined {
  let lastUser = -1;
  messages.forEach((message, index) => {
    if (message.info.role === 'user') lastUser = index;
  });
  const byModel = new Map<string, ModelUsage>();
  for (const { info } of messages.slice(lastUser + 1)) {
    if (info.role !== 'assistant') continue;
    const part: ModelUsage = {
      model: info.modelID,
      inputTokens: info.tokens.input,
      outputTokens: info.tokens.output + (info.tokens.reasoning ?? 0),
      cacheReadTokens: info.tokens.cache.read,
      cacheWriteTokens: info.tokens.cache.write,
      ...(info.cost > 0 ? { costUsd: info.cost } : {}),
    };
    const seen = byModel.get(info.modelID);
    byModel.set(info.modelID, seen ? sumUsage(info.modelID, [seen, part]) : part);
  }
  const models = [...byModel.values()];
  if (models.length === 0) return undefined;
  return { ...sumUsage(models[models.length - 1]!.model, models), durationMs, ...(models.length > 1 ? { byModel: models } : {}) };
}

/** The answer of the last turn: the text parts of the last assistant message after the last user message. */
export function lastAnswer(messages: { info: Message; parts: Part[] }[]): string | null {
  let lastUser = -1;
  messages.forEach((message, index) => {
    if (message.info.role === 'user') lastUser = index;
  });
  for (let index = messages.length - 1; index > lastUser; index -= 1) {
    const message = messages[index]!;
    if (message.info.role !== 'assistant') continue;
    const text = message.parts
      .filter((part): part is Extract<Part, { type: 'text' }> => part.type === 'text' && !part.synthetic)
      .map((part) => part.text)
      .join('')
      .trim();
    if (text) return text;
  }
  return null;
}
