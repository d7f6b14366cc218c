import { Codex, type Thread } from '@openai/codex-sdk';
import { createLogger, errorMessage, type Logger } from '../../shared/log.js';
import { ModelDeadline } from '../deadline.js';
import { FollowUps } from '../follow-ups.js';
import { promptToText } from '../prompt-text.js';
import type { AgentProvider, AgentQuery, ProviderConfig, ProviderEvent, QueryInput } from '../types.js';
import { codexHome, codexOptions, ensureGitRepository, readCodexSettings, threadOptions, type CodexSettings } from './config.js';
import { classifyCodexError, codexTurnUsage, CodexTurn } from './events.js';

/**
 * The Codex provider. Each turn is one `codex exec` process; the thread
 * (conversation) lives in CODEX_HOME and is resumed by id. Codex has no streaming input, so a follow-up pushed during
 * a turn interrupts it (abort) and the provider restarts on the same thread with the follow-up as the next prompt.
 */
/** How long `codex exec` may take to start a turn (process and MCP server start-up), at least. */
const STARTUP_TIMEOUT_MS = 60_000;

interface QueryControl {
  /** the current turn's abort controller (replaced per turn). */
  controller: AbortController;
  aborted: boolean;
  timedOut: boolean;
}

export class CodexProvider implements AgentProvider {
  /** `codex exec` takes no slash commands; everything goes to the model as text. */
  readonly nativeSlashCommands: readonly string[] = [];
  private readonly settings: CodexSettings;
  private readonly log: Logger = createLogger('codex');
  private readonly gitChecked = new Set<string>();

  constructor(config: ProviderConfig) {
    this.settings = readCodexSettings(config.env, config.model);
  }

  query(input: QueryInput): AgentQuery {
    const control: QueryControl = { controller: new AbortController(), aborted: false, timedOut: false };
    // A push interrupts the running turn; the loop in `run` restarts with the pushed messages.
    const followUps = new FollowUps(() => control.controller.abort());
    return {
      push: (message) => followUps.push(message),
      end: () => followUps.end(),
      abort: () => {
        control.aborted = true;
        followUps.end();
        control.controller.abort();
      },
      events: this.run(input, control, followUps),
    };
  }

  private async *run(input: QueryInput, control: QueryControl, followUps: FollowUps): AsyncGenerator<ProviderEvent> {
    let thread: Thread;
    try {
      if (!this.gitChecked.has(input.cwd)) {
        ensureGitRepository(input.cwd, (m) => this.log.info(m));
        this.gitChecked.add(input.cwd);
      }
      const home = codexHome(this.settings, input.cwd);
      const codex = new Codex(codexOptions(this.settings, input, home));
      const options = threadOptions(this.settings, input);
      thread = input.sessionId ? codex.resumeThread(input.sessionId, options) : codex.startThread(options);
      this.log.info(`${input.sessionId ? `resuming thread ${input.sessionId}` : 'starting a new thread'} (home ${home})`);
    } catch (err) {
      yield { type: 'error', message: `codex could not start: ${errorMessage(err)}`, retryable: true, classification: 'codex' };
      return;
    }

    let prompt: string | null = promptToText(input.prompt);
    let initSent = false;
    while (prompt !== null && !control.aborted) {
      const turn = this.startTurn(control);
      const started = Date.now();
      let thrown: unknown = null;
      try {
        const { events } = await thread.runStreamed(prompt, { signal: control.controller.signal });
        for await (const event of events) {
          yield* turn.translate(event);
          if (!initSent && turn.threadId) {
            initSent = true;
            yield { type: 'init', sessionId: turn.threadId };
          }
        }
      } catch (err) {
        thrown = err;
      } finally {
        turn.deadline.stop();
      }

      // A turn that completed counts even if a push or abort raced with its last moments.
      if (turn.completed && !turn.failure) {
        this.log.info(`turn completed in ${Date.now() - started} ms`);
        const usage = codexTurnUsage(turn.usage, this.settings.model, Date.now() - started);
        yield { type: 'result', text: turn.text || null, ...(usage ? { usage } : {}) };
        prompt = followUps.take() ?? (await followUps.next());
        continue;
      }
      if (control.aborted) return;
      if (control.timedOut) {
        const message = `no answer from the model server within ${turn.deadline.timeoutMs} ms${turn.failure ? ` (${turn.failure})` : ''}`;
        yield { type: 'error', message, retryable: true, classification: 'transport' };
        return;
      }
      if (followUps.hasPending) {
        // Interrupted by a follow-up. The thread keeps the interrupted turn's input once it has started; if it had not
        // started yet, the interrupted prompt goes along so nothing is lost.
        const pushed = followUps.take();
        this.log.info('turn interrupted by a follow-up; restarting with it');
        prompt = thread.id ? pushed : `${prompt}\n\n${pushed}`;
        continue;
      }
      const message = turn.failure ?? (thrown ? errorMessage(thrown) : 'codex turn ended without completing');
      yield { type: 'error', message, ...classifyCodexError(message) };
      return;
    }
  }

  /** A fresh abort controller and model deadline for the next turn. */
  private startTurn(control: QueryControl): CodexTurn {
    control.controller = new AbortController();
    const controller = control.controller;
    const deadline = new ModelDeadline(this.settings.timeoutMs, () => {
      this.log.warn(`no model activity for ${this.settings.timeoutMs} ms; stopping the turn`);
      control.timedOut = true;
      controller.abort();
    });
    // Until `turn.started` the CLI is starting (and starting the MCP servers): a longer window for that, then the
    // model deadline proper (see CodexTurn).
    deadline.touch(Math.max(this.settings.timeoutMs, STARTUP_TIMEOUT_MS));
    return new CodexTurn(deadline);
  }
}
