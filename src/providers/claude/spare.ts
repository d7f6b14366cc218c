import type { WarmQuery } from '@anthropic-ai/claude-agent-sdk';
import type { Logger } from '../../shared/log.js';
import type { QueryInput } from '../types.js';
import type { ClaudeSettings } from './config.js';
import { claudeOptions } from './options.js';

/**
 * A warm Claude Code process for the next query (opt-in, PINCER_CLAUDE_PREWARM=1). Starting Claude Code, resuming
 * the session and connecting its MCP servers is most of a query's latency; after a query the provider starts the
 * process the next one will need (same folder, prompt, servers and environment, resuming where this one ended) and
 * parks it. The next query takes it only if its input matches exactly; otherwise it is closed and the query starts
 * cold. The price is an idle Claude Code process (and its MCP servers) while the runner waits.
 */
export class SpareProcess {
  /** where the parked process's stderr goes; the run that takes it points this at itself. */
  stderrSink: (data: string) => void = () => {};
  private readonly warm: Promise<WarmQuery | undefined>;
  private taken = false;
  private closed = false;

  constructor(
    readonly key: string,
    input: QueryInput,
    settings: ClaudeSettings,
    private readonly log: Logger,
  ) {
    this.warm = this.start(input, settings);
  }

  /** The warm process, or undefined when it failed to start (the caller then starts cold). Once only. */
  async take(): Promise<WarmQuery | undefined> {
    this.taken = true;
    return this.warm;
  }

  /** Stop the parked process (unless a query took it); resolves once it has been told to exit. */
  async close(): Promise<void> {
    if (this.closed || this.taken) return;
    this.closed = true;
    const warm = await this.warm;
    warm?.close();
  }

  private async start(input: QueryInput, settings: ClaudeSettings): Promise<WarmQuery | undefined> {
    try {
      const { startup } = await import('@anthropic-ai/claude-agent-sdk');
      const options = claudeOptions(input, settings, this.log, (data) => this.stderrSink(data));
      const started = Date.now();
      const warm = await startup({ options, initializeTimeoutMs: 60_000 });
      if (this.closed) warm.close();
      else this.log.info(`prewarmed Claude Code ready in ${Date.now() - started} ms`);
      return warm;
    } catch (err) {
      this.log.warn(`could not prewarm Claude Code: ${(err as Error).message}`);
      return undefined;
    }
  }
}

/** What must be equal for a spare to serve a query. */
export function spareKey(input: QueryInput): string {
  const { cwd, sessionId, resumeAt, systemPrompt, mcpServers, env, additionalDirectories } = input;
  return JSON.stringify([cwd, sessionId ?? null, resumeAt ?? null, systemPrompt ?? null, mcpServers, env, additionalDirectories ?? []]);
}
