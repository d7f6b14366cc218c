import { truncateToWidth, type Component } from '@mariozechner/pi-tui';
import { durationMs, type ToolActivity } from '../../../db/tool-activity.js';
import type { TuiPalette } from './palette.js';

/**
 * One tool call of the agent on one line, kept up to date: `… bash ls -la  2 s` while it runs, then `✓ … 0.4 s` or
 * `✗ … failed after 1.2 s`. Name and preview arrive cleaned (src/db/tool-activity.ts); the line is cut to the width.
 */
export class ToolLine implements Component {
  constructor(
    private activity: ToolActivity,
    private readonly palette: TuiPalette,
    private readonly now: () => number = Date.now,
  ) {}

  get id(): number {
    return this.activity.id;
  }

  get running(): boolean {
    return this.activity.status === 'running';
  }

  update(activity: ToolActivity): void {
    this.activity = activity;
  }

  render(width: number): string[] {
    return [truncateToWidth(this.text(), width)];
  }

  /** The line without width limits (what a test or the plain chat would print). */
  text(): string {
    const { name, preview, status } = this.activity;
    const ms = durationMs(this.activity, this.now());
    const seconds = ms === null ? '' : status === 'running' ? `${Math.floor(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
    const mark = status === 'running' ? this.palette.accent('…') : status === 'ok' ? this.palette.tool('✓') : this.palette.error('✗');
    const what = `${this.palette.tool(name)}${preview ? ` ${preview}` : ''}`;
    const outcome = status === 'error' ? this.palette.error(` failed${seconds ? ` after ${seconds}` : ''}`) : seconds ? this.palette.dim(`  ${seconds}`) : '';
    return `  ${mark} ${what}${outcome}`;
  }

  invalidate(): void {}
}
