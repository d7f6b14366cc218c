import { promptToText } from '../providers/prompt-text.js';
import type { AgentProvider, AgentQuery, ProviderEvent, QueryInput } from '../providers/types.js';

/** One call the scripted provider expects, in order: what the prompt must hold, and what it answers. */
export interface ScriptedCall {
  /** the prompt (or follow-up) must contain this text, or match this expression; absent: any prompt */
  expect?: string | RegExp;
  /** the answer's text, or the events to send instead (an error, a notice, a result with usage) */
  answer: string | ProviderEvent[];
  /** answer only once this settles: a turn a test keeps in flight (a follow-up, a stop while working) */
  hold?: Promise<unknown>;
}

/** What one call received: the prompt text and the query's input (working directory, MCP servers, resume point). */
export interface ReceivedCall {
  prompt: string;
  input: QueryInput;
  /** true for a message pushed into an open query, false for the query's first prompt */
  followUp: boolean;
}

/**
 * A provider test double: each prompt (a query's first or a follow-up pushed into it) takes the next scripted call,
 * checks it against what the call expects and answers as scripted. A prompt with no call left, or one that does not
 * match, answers with a non-retryable error and is recorded; `assertComplete()` fails on those and on calls never
 * made. It runs in the runner's process (the in-process launcher), so a host test needs no child process.
 */
export class ScriptedProvider implements AgentProvider {
  readonly nativeSlashCommands: readonly string[] = [];
  readonly received: ReceivedCall[] = [];
  /** follow-ups pushed into open queries, when pushed (before they are answered) */
  readonly pushed: string[] = [];
  private readonly script: ScriptedCall[];
  private readonly problems: string[] = [];
  private queries = 0;

  constructor(script: ScriptedCall[] = []) {
    this.script = [...script];
  }

  /** Add calls to the end of the script (a test that learns what comes next as it goes). Not `then`: that would make it a thenable. */
  add(...calls: ScriptedCall[]): this {
    this.script.push(...calls);
    return this;
  }

  /** Throws, naming each, when a call was unexpected or did not match, or when scripted calls were never made. */
  assertComplete(): void {
    const left = this.script.map((call) => `never called: ${describe(call)}`);
    const all = [...this.problems, ...left];
    if (all.length > 0) throw new Error(`scripted provider: ${all.join('; ')}`);
  }

  query(input: QueryInput): AgentQuery {
    this.queries += 1;
    const sessionId = `scripted-${this.queries}`;
    const inbox: { prompt: string; followUp: boolean }[] = [{ prompt: promptToText(input.prompt), followUp: false }];
    let ended = false;
    let aborted = false;
    let wake: (() => void) | undefined;
    const notify = (): void => {
      wake?.();
      wake = undefined;
    };
    const next = async (): Promise<{ prompt: string; followUp: boolean } | undefined> => {
      while (inbox.length === 0 && !ended && !aborted) await new Promise<void>((resolve) => (wake = resolve));
      return aborted ? undefined : inbox.shift();
    };
    const answer = (prompt: string, followUp: boolean): Promise<ProviderEvent[]> => this.answer(prompt, followUp, input);
    async function* events(): AsyncGenerator<ProviderEvent> {
      yield { type: 'init', sessionId };
      for (let message = await next(); message; message = await next()) {
        for (const event of await answer(message.prompt, message.followUp)) {
          if (aborted) return;
          yield event;
        }
      }
    }
    return {
      push: (message) => {
        this.pushed.push(message);
        inbox.push({ prompt: message, followUp: true });
        notify();
      },
      end: () => {
        ended = true;
        notify();
      },
      abort: () => {
        aborted = true;
        notify();
      },
      events: events(),
    };
  }

  private async answer(prompt: string, followUp: boolean, input: QueryInput): Promise<ProviderEvent[]> {
    this.received.push({ prompt, input, followUp });
    const call = this.script.shift();
    if (!call) return this.refuse(`unexpected call with prompt ${JSON.stringify(excerpt(prompt))}`);
    if (call.expect !== undefined && !matches(call.expect, prompt)) {
      return this.refuse(`expected ${describe(call)}, got prompt ${JSON.stringify(excerpt(prompt))}`);
    }
    await call.hold;
    return typeof call.answer === 'string' ? [{ type: 'result', text: call.answer }] : call.answer;
  }

  private refuse(problem: string): ProviderEvent[] {
    this.problems.push(problem);
    return [{ type: 'error', message: `scripted provider: ${problem}`, retryable: false }];
  }
}

function matches(expect: string | RegExp, prompt: string): boolean {
  return typeof expect === 'string' ? prompt.includes(expect) : expect.test(prompt);
}

function describe(call: ScriptedCall): string {
  const answer = typeof call.answer === 'string' ? JSON.stringify(call.answer) : `${call.answer.length} event(s)`;
  return `${call.expect === undefined ? 'any prompt' : `a prompt with ${String(call.expect)}`} → ${answer}`;
}

function excerpt(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
