import { Agent, type AgentEvent, type AgentMessage } from '@mariozechner/pi-agent-core';
import type { AssistantMessage, ImageContent, TextContent } from '@mariozechner/pi-ai';
import { AsyncQueue } from '../../shared/async-queue.js';
import type { Logger } from '../../shared/log.js';
import { ModelDeadline } from '../deadline.js';
import { FollowUps } from '../follow-ups.js';
import type { ContentBlock, ProviderEvent, TurnUsage } from '../types.js';
import { classifyModelError } from './errors.js';

/**
 * One query of the built-in runtime: drives a pi-agent-core `Agent` (the loop, tool execution, steering queue) and
 * translates its events into the provider contract. A follow-up pushed while the agent works is steered into the
 * running loop (it reaches the model after the current tool calls); one pushed while it rests starts the next prompt.
 * Every answer (an assistant message that ends a turn without tool calls) is one `result`. A failure is exactly one
 * `error` event, after which the stream ends; an abort ends it quietly.
 */
/** How usage is reported: the model's id, and whether pi-ai's catalogue priced it (else the cost is left out). */
export interface UsageSource {
  model: string;
  priced: boolean;
}

export class PincerRun {
  readonly events = new AsyncQueue<ProviderEvent>();
  private readonly followUps = new FollowUps();
  private readonly deadline: ModelDeadline;
  private running = false;
  private aborted = false;
  private timedOut = false;
  private failure: ProviderEvent | undefined;
  private usage: TurnUsage;

  constructor(
    private readonly agent: Agent,
    private readonly sessionId: string,
    private readonly persist: (message: AgentMessage) => void,
    private readonly log: Logger,
    timeoutMs: number,
    private readonly usageSource: UsageSource,
  ) {
    this.usage = this.emptyUsage();
    this.deadline = new ModelDeadline(timeoutMs, () => {
      this.log.warn(`no model activity for ${timeoutMs} ms; stopping the turn`);
      this.timedOut = true;
      this.agent.abort();
    });
  }

  /** Usage from now on; `durationMs` holds the start time until the answer comes. */
  private emptyUsage(): TurnUsage {
    return { model: this.usageSource.model, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, durationMs: Date.now() };
  }

  push(text: string): void {
    if (this.aborted || this.followUps.isEnded) return;
    if (this.running) this.agent.steer(userMessage(text));
    else this.followUps.push(text);
  }

  end(): void {
    this.followUps.end();
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.followUps.end();
    this.deadline.stop();
    this.agent.abort();
  }

  /** Run the first prompt, then each follow-up, until input ends, a failure or an abort. Never rejects. */
  async drive(prompt: string | ContentBlock[]): Promise<void> {
    const unsubscribe = this.agent.subscribe((event) => this.onEvent(event));
    try {
      this.events.push({ type: 'init', sessionId: this.sessionId });
      let next: AgentMessage | null = userMessage(prompt);
      while (next && !this.aborted) {
        this.running = true;
        this.usage = this.emptyUsage();
        this.deadline.touch();
        await this.agent.prompt(next);
        // A steer that arrived as the loop was finishing is still queued: run it now.
        while (!this.aborted && !this.failure && this.agent.hasQueuedMessages()) await this.agent.continue();
        this.running = false;
        this.deadline.rest();
        if (this.failure) {
          this.events.push(this.failure);
          break;
        }
        const text = await this.followUps.next();
        next = text === null ? null : userMessage(text);
      }
    } catch (err) {
      if (!this.aborted) this.events.push({ type: 'error', message: `the built-in runtime failed: ${String(err)}`, retryable: true, classification: 'pincer' });
    } finally {
      unsubscribe();
      this.deadline.stop();
      this.events.end();
    }
  }

  private onEvent(event: AgentEvent): void {
    switch (event.type) {
      case 'message_update':
        this.deadline.touch();
        break;
      case 'message_end':
        this.persist(event.message);
        break;
      case 'tool_execution_start':
        this.deadline.toolStarted();
        this.log.info(`tool ${event.toolName}`);
        this.events.push({ type: 'tool', phase: 'start', id: event.toolCallId, name: event.toolName, args: event.args });
        break;
      case 'tool_execution_end':
        this.deadline.toolFinished();
        if (event.isError) this.log.info(`tool ${event.toolName} failed: ${firstLine(resultText(event.result))}`);
        this.events.push({ type: 'tool', phase: 'end', id: event.toolCallId, ok: !event.isError });
        break;
      case 'turn_end':
        if (event.message.role === 'assistant') this.onTurnEnd(event.message);
        break;
      default:
        break;
    }
  }

  private onTurnEnd(message: AssistantMessage): void {
    addUsage(this.usage, message, this.usageSource.priced);
    if (message.stopReason === 'aborted') {
      if (this.timedOut && !this.failure) {
        this.failure = {
          type: 'error',
          message: `no answer from the model server within ${this.deadline.timeoutMs} ms`,
          retryable: true,
          classification: 'transport',
        };
      }
      return;
    }
    if (message.stopReason === 'error') {
      this.failure ??= { type: 'error', message: message.errorMessage ?? 'the model call failed', ...classifyModelError(message.errorMessage ?? '') };
      return;
    }
    if (message.content.some((block) => block.type === 'toolCall')) return;
    const text = message.content
      .flatMap((block) => (block.type === 'text' ? [block.text] : []))
      .join('\n')
      .trim();
    const usage = { ...this.usage, durationMs: Date.now() - this.usage.durationMs };
    this.usage = this.emptyUsage();
    this.log.info(
      `answer: ${usage.inputTokens} in / ${usage.outputTokens} out tokens` +
        (usage.costUsd ? `, $${usage.costUsd.toFixed(4)}` : '') +
        ` in ${usage.durationMs} ms`,
    );
    this.events.push({ type: 'result', text: text || null, resumeAt: message.responseId, usage });
  }
}

export function userMessage(prompt: string | ContentBlock[]): AgentMessage {
  if (typeof prompt === 'string') return { role: 'user', content: prompt, timestamp: Date.now() };
  const content: (TextContent | ImageContent)[] = prompt.map((block) => {
    if (block.type === 'text') return { type: 'text', text: block.text };
    if (block.type === 'image') return { type: 'image', data: block.source.data, mimeType: block.source.media_type };
    return { type: 'text', text: '[a PDF attachment this runtime cannot read natively]' };
  });
  return { role: 'user', content, timestamp: Date.now() };
}

function addUsage(total: TurnUsage, message: AssistantMessage, priced: boolean): void {
  const u = message.usage;
  total.inputTokens += u.input;
  total.outputTokens += u.output;
  total.cacheReadTokens += u.cacheRead;
  total.cacheWriteTokens += u.cacheWrite;
  if (priced) total.costUsd = (total.costUsd ?? 0) + u.cost.total;
}

function resultText(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] } | undefined)?.content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}

function firstLine(text: string): string {
  return text.split('\n')[0]?.slice(0, 200) ?? '';
}
