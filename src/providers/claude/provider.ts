import type { Query, SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
import fs from 'node:fs';
import { AsyncQueue } from '../../shared/async-queue.js';
import { createLogger, errorMessage, type Logger } from '../../shared/log.js';
import type { AgentProvider, AgentQuery, ContentBlock, ProviderEvent, QueryInput } from '../types.js';
import { claudeConfigDir, findSessionTranscript, type ClaudeSettings } from './config.js';
import { ModelDeadline } from './deadline.js';
import { classifyErrorText, ClaudeProviderError, isClaudeProviderError } from './errors.js';
import { ClaudeEventTranslator, errorEvent } from './events.js';
import { ClaudeUsageMeter, type UsageTotals } from './usage.js';
import { claudeOptions } from './options.js';
import { SpareProcess, spareKey } from './spare.js';
import { isOnResumeChain } from './transcript.js';
import { rawSetting } from '../../shared/settings-load.js';

/**
 * The Claude provider: Claude Code through `@anthropic-ai/claude-agent-sdk`, fed by a
 * push-based message stream so follow-ups reach the running query. One Claude Code process per query (with
 * PINCER_CLAUDE_PREWARM, started ahead of it: see spare.ts).
 *
 * Contract kept here: `query()` never throws and never rejects later; every failure (an API error, a crash of the
 * Claude Code process, a silent model) becomes exactly one `error` event, after which the event stream ends and the
 * Claude Code process is stopped.
 */

type UserContent = Exclude<SDKUserMessage['message']['content'], string>;
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
type ImageType = (typeof IMAGE_TYPES)[number];

export class ClaudeProvider implements AgentProvider {
  readonly nativeSlashCommands = ['/compact'] as const;
  /** Images and PDFs go to Claude as native content blocks. */
  readonly nativeMedia = ['image', 'pdf'] as const;
  /** The PreCompact hook archives transcripts, so the runner does not. */
  readonly archivesTranscripts = true;
  private readonly runs = new Set<ClaudeRun>();
  private readonly log: Logger = createLogger('claude');
  private spare: SpareProcess | undefined;
  private closed = false;
  /** the running usage totals each session reached, the baseline of its next query. */
  private readonly usageTotals: UsageTotals = new Map();

  constructor(private readonly settings: ClaudeSettings) {}

  query(input: QueryInput): AgentQuery {
    const run = new ClaudeRun(input, this.settings, this.log, this.takeSpare(input), this.usageTotals);
    this.runs.add(run);
    void run.done.then(() => {
      this.runs.delete(run);
      this.prewarmAfter(run);
    });
    return {
      push: (message) => run.push(message),
      end: () => run.end(),
      abort: () => run.abort(),
      events: run.events,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const spare = this.spare;
    this.spare = undefined;
    const runs = [...this.runs];
    for (const run of runs) run.abort();
    await Promise.all([spare?.close(), ...runs.map((run) => run.done)]);
  }

  /** The parked process if it was started for exactly this input; any other spare is closed. */
  private takeSpare(input: QueryInput): SpareProcess | undefined {
    const spare = this.spare;
    this.spare = undefined;
    if (!spare) return undefined;
    if (spare.key === spareKey(input)) return spare;
    this.log.info('the prewarmed Claude Code does not fit this query; starting a new one');
    void spare.close();
    return undefined;
  }

  private prewarmAfter(run: ClaudeRun): void {
    if (!this.settings.prewarm || this.closed || this.runs.size > 0 || !run.succeeded) return;
    const next = run.nextInput();
    this.spare = new SpareProcess(spareKey(next), next, this.settings, this.log);
  }
}

/** One query: the Claude Code process, its input stream, and the events it produces. */
class ClaudeRun {
  readonly events = new AsyncQueue<ProviderEvent>();
  readonly done: Promise<void>;
  private readonly prompts = new AsyncQueue<SDKUserMessage>();
  private readonly deadline: ModelDeadline;
  private readonly translator: ClaudeEventTranslator;
  private readonly stderrTail: string[] = [];
  private sdkQuery: Query | undefined;
  private finished = false;
  private failed = false;
  private answered = false;
  private sessionId: string | undefined;
  private resumeAt: string | undefined;

  constructor(
    private readonly input: QueryInput,
    private readonly settings: ClaudeSettings,
    private readonly log: Logger,
    private readonly spare: SpareProcess | undefined,
    usageTotals: UsageTotals,
  ) {
    this.translator = new ClaudeEventTranslator(log, rawSetting(input.env, 'ANTHROPIC_BASE_URL'), new ClaudeUsageMeter(input.sessionId, usageTotals));
    this.deadline = new ModelDeadline(settings.timeoutMs, (waited, phase) => {
      const what = phase === 'startup' ? 'Claude Code did not start' : 'the model did not answer';
      this.fail(new ClaudeProviderError('timeout', `${what} within ${waited} ms (PINCER_PROVIDER_TIMEOUT_MS)`));
    });
    this.prompts.push(userMessage(input.prompt, log));
    this.done = this.run();
  }

  push(text: string): void {
    if (this.finished) return;
    this.deadline.promptSent();
    this.prompts.push(userMessage(text, this.log));
  }

  end(): void {
    this.prompts.end();
  }

  abort(): void {
    this.failed = true;
    this.finish();
  }

  /** The query answered and ended without an error or abort. */
  get succeeded(): boolean {
    return this.finished && this.answered && !this.failed;
  }

  /** What the runner will ask next if nothing changes: the same input, resuming where this query ended. */
  nextInput(): QueryInput {
    return { ...this.input, prompt: '', sessionId: this.sessionId ?? this.input.sessionId, resumeAt: this.resumeAt ?? this.input.resumeAt };
  }

  private async run(): Promise<void> {
    const input = this.resumable(this.input);
    try {
      // Loaded on first use, so a runner on another provider never loads the SDK.
      const { query } = await import('@anthropic-ai/claude-agent-sdk');
      const warm = await this.spare?.take();
      if (this.finished) {
        warm?.close();
        return;
      }
      const resume = input.sessionId ? ` resuming ${input.sessionId}${input.resumeAt ? ` at ${input.resumeAt}` : ''}` : '';
      const onStderr = (data: string): void => this.noteStderr(data);
      if (warm && this.spare) {
        this.log.info(`using the prewarmed Claude Code${resume}`);
        this.spare.stderrSink = onStderr;
        this.sdkQuery = warm.query(this.prompts);
      } else {
        this.log.info(`starting Claude Code${resume}`);
        this.sdkQuery = query({ prompt: this.prompts, options: claudeOptions(input, this.settings, this.log, onStderr) });
      }
      this.deadline.promptSent();
      for await (const message of this.sdkQuery) {
        this.deadline.observe(message);
        for (const event of this.translator.translate(message)) this.emit(event);
        if (this.finished) break;
      }
    } catch (err) {
      if (!this.finished) this.fail(this.classifyThrown(err));
    } finally {
      this.finish();
    }
  }

  /**
   * The input with its resume point only where Claude Code can resume it, else a warning: a session gone from the
   * config dir (one that did not survive a container restart) starts a new conversation, and a resume point no longer
   * on the conversation (compacted away after a failed query) resumes from the end. Either would otherwise fail every
   * query of the session for good.
   */
  private resumable(input: QueryInput): QueryInput {
    if (!input.sessionId) return input;
    const transcript = findSessionTranscript(input.env, input.sessionId);
    if (!transcript) {
      this.log.warn(`session ${input.sessionId} is not in ${claudeConfigDir(input.env)}; starting a new conversation`);
      return { ...input, sessionId: undefined, resumeAt: undefined };
    }
    if (input.resumeAt && !isOnResumeChain(fs.readFileSync(transcript, 'utf8'), input.resumeAt)) {
      this.log.warn(`resume point ${input.resumeAt} is no longer in session ${input.sessionId}; resuming from its end`);
      return { ...input, resumeAt: undefined };
    }
    return input;
  }

  private emit(event: ProviderEvent): void {
    if (this.finished) return;
    this.events.push(event);
    if (event.type === 'init') this.sessionId = event.sessionId;
    if (event.type === 'result') {
      this.answered = true;
      if (event.resumeAt) this.resumeAt = event.resumeAt;
    }
    if (event.type === 'error') {
      this.failed = true;
      this.log.warn(`${event.classification ?? 'error'}: ${event.message}`);
      this.finish();
    }
  }

  private fail(error: ClaudeProviderError): void {
    this.emit(errorEvent(error));
  }

  /** Stop everything once: no more input, the Claude Code process closed, the event stream ended. */
  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.deadline.stop();
    this.prompts.end();
    try {
      this.sdkQuery?.close();
    } catch (err) {
      this.log.debug(`close: ${errorMessage(err)}`);
    }
    this.events.end();
  }

  private classifyThrown(err: unknown): ClaudeProviderError {
    if (isClaudeProviderError(err)) return err;
    const message = errorMessage(err);
    const code = classifyErrorText(message);
    const stderr = this.stderrTail.join('').trim();
    const detail = stderr && code === 'crash' ? ` (Claude Code said: ${stderr.slice(-500)})` : '';
    return new ClaudeProviderError(code === 'unknown' ? 'crash' : code, `${message}${detail}`);
  }

  private noteStderr(data: string): void {
    this.stderrTail.push(data);
    if (this.stderrTail.length > 20) this.stderrTail.shift();
    this.log.debug(`cli: ${data.trimEnd()}`);
  }
}

/** A prompt as a Claude user message; content blocks become native image/document blocks. */
export function userMessage(prompt: string | ContentBlock[], log: Logger): SDKUserMessage {
  const content = typeof prompt === 'string' ? prompt : toClaudeContent(prompt, log);
  return { type: 'user', message: { role: 'user', content }, parent_tool_use_id: null };
}

function toClaudeContent(blocks: ContentBlock[], log: Logger): UserContent {
  return blocks.map((block): UserContent[number] => {
    if (block.type === 'text') return { type: 'text', text: block.text };
    if (block.type === 'document') {
      return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: block.source.data } };
    }
    const mediaType = block.source.media_type;
    if (isImageType(mediaType)) return { type: 'image', source: { type: 'base64', media_type: mediaType, data: block.source.data } };
    // The API takes only these image types; say what was left out rather than fail the whole prompt.
    log.warn(`image of type ${mediaType} is not supported by Claude; sent as a note instead`);
    return { type: 'text', text: `[an image of type ${mediaType} was attached but cannot be shown]` };
  });
}

function isImageType(value: string): value is ImageType {
  return (IMAGE_TYPES as readonly string[]).includes(value);
}
