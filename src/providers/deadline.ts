import { settingOrDefault } from '../shared/settings-load.js';
/**
 * A provider's own deadline for a silent or unreachable model server. The Codex and OpenCode CLIs retry an unreachable
 * server for minutes (OpenCode forever), so the provider stops waiting after `timeoutMs` without model activity and
 * reports an `error` event instead. The clock stops while a tool runs (a tool such as `ask_user_question` may
 * legitimately block for a long time) and restarts on every sign of model progress.
 */
export class ModelDeadline {
  private timer: NodeJS.Timeout | null = null;
  private toolsRunning = 0;
  private stopped = false;

  constructor(
    readonly timeoutMs: number,
    private readonly onExpire: () => void,
  ) {}

  /** Model progress (a token, an item, a tool result): restart the clock, for `ms` this once if given. */
  touch(ms: number = this.timeoutMs): void {
    if (this.stopped || this.toolsRunning > 0) return;
    this.arm(ms);
  }

  /** A tool started: the model is not what we wait for until `toolFinished()`. */
  toolStarted(): void {
    this.toolsRunning += 1;
    this.clear();
  }

  toolFinished(): void {
    if (this.toolsRunning > 0) this.toolsRunning -= 1;
    this.touch();
  }

  /** The turn is over: nothing to wait for until the next `touch()`. */
  rest(): void {
    this.toolsRunning = 0;
    this.clear();
  }

  /** No more waiting, ever (the query is over). */
  stop(): void {
    this.stopped = true;
    this.clear();
  }

  private arm(ms: number): void {
    this.clear();
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.stopped) this.onExpire();
    }, ms);
  }

  private clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

/** PINCER_PROVIDER_TIMEOUT_MS, default 120 s: long enough for slow reasoning, short enough not to hang a session. */
export function providerTimeoutMs(env: Record<string, string | undefined>): number {
  return settingOrDefault(env, 'PINCER_PROVIDER_TIMEOUT_MS');
}
