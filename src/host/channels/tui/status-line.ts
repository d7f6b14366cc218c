import { truncateToWidth, type Component } from '@mariozechner/pi-tui';
import type { TuiPalette } from './palette.js';

/**
 * The line under the editor: what answers (provider, model), whether the agent works and for how long, and the tool
 * it runs now.
 */
export class StatusLine implements Component {
  private workingSince: number | null = null;
  private tool: string | null = null;
  private leaving = false;

  constructor(
    private readonly describe: string,
    public palette: TuiPalette,
    private readonly now: () => number = Date.now,
  ) {}

  setWorking(active: boolean): void {
    if (active && this.workingSince === null) this.workingSince = this.now();
    if (!active) {
      this.workingSince = null;
      this.tool = null;
    }
  }

  get working(): boolean {
    return this.workingSince !== null;
  }

  setTool(tool: string | null): void {
    this.tool = tool;
  }

  setLeaving(): void {
    this.leaving = true;
  }

  text(): string {
    const parts = [this.describe];
    if (this.workingSince !== null) parts.push(`working… ${Math.floor((this.now() - this.workingSince) / 1000)} s${this.tool ? ` · ${this.tool}` : ''}`);
    if (this.leaving) parts.push('leaving once answered — Ctrl-C again to quit');
    return parts.join(' · ');
  }

  render(width: number): string[] {
    return [truncateToWidth(this.palette.dim(this.text()), width)];
  }

  invalidate(): void {}
}
