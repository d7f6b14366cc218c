import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';

/**
 * The provider's own deadline for a silent model (Claude Code retries an unreachable or hanging server for minutes).
 * The clock runs only while the provider waits for the model: from a prompt, or from the last tool result, until
 * the model streams something. It stops while tools run (a Bash command or `ask_user_question` may take long) and
 * between turns, so only a model that says nothing for `timeoutMs` trips it. Until Claude Code's first message the
 * clock allows `startupMs` more: starting the process is not the model's silence.
 */
export class ModelDeadline {
  private timer: NodeJS.Timeout | undefined;
  private readonly toolsRunning = new Set<string>();
  private idle = false;
  private stopped = false;
  private started = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly onTimeout: (waitedMs: number, phase: 'startup' | 'model') => void,
    private readonly startupMs = 30_000,
  ) {}

  /** A prompt was sent (the first, or a push): wait for the model unless a tool is running. */
  promptSent(): void {
    if (!this.idle && this.timer) return;
    this.idle = false;
    if (this.toolsRunning.size === 0) this.restart();
  }

  /** Update the clock from one SDK message. */
  observe(message: SDKMessage): void {
    if (this.stopped) return;
    if (!this.started) {
      this.started = true;
      if (this.timer) this.restart();
    }
    if (message.type === 'result') {
      this.idle = true;
      this.toolsRunning.clear();
      this.clear();
      return;
    }
    if (message.type === 'stream_event') {
      if (this.timer) this.restart();
      return;
    }
    if (message.type === 'assistant' && message.parent_tool_use_id === null) {
      for (const block of message.message.content) {
        if (block.type === 'tool_use' || block.type === 'server_tool_use' || block.type === 'mcp_tool_use') {
          this.toolsRunning.add(block.id);
        }
      }
      if (this.toolsRunning.size > 0) this.clear();
      else this.restart();
      return;
    }
    if (message.type === 'user' && message.parent_tool_use_id === null && Array.isArray(message.message.content)) {
      for (const block of message.message.content) {
        if (block.type === 'tool_result') this.toolsRunning.delete(block.tool_use_id);
      }
      if (this.toolsRunning.size === 0 && !this.idle) this.restart();
    }
  }

  stop(): void {
    this.stopped = true;
    this.clear();
  }

  private restart(): void {
    if (this.stopped) return;
    this.clear();
    const phase = this.started ? 'model' : 'startup';
    const ms = this.started ? this.timeoutMs : this.timeoutMs + this.startupMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.stopped) this.onTimeout(ms, phase);
    }, ms);
  }

  private clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
