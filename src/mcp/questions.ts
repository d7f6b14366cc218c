import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { insertOutbound } from '../db/messages.js';
import { takeAnswer } from '../db/questions.js';
import { readRunnerState, swapRunnerStateName } from '../db/state.js';
import type { RunnerStateName } from '../db/types.js';
import { Waker } from '../db/wake.js';
import { batchRouting } from './routing.js';
import { label, text } from './schemas.js';
import { textResult, type ToolContext } from './types.js';
import { PincerError } from '../shared/errors.js';

/**
 * ask_user_question: a blocking tool call. Writes the question row, marks the runner
 * `waiting_user`, and waits for the host to write the answer — a `system` row `{type: 'question_response',
 * questionId, selectedOption}`, which the poll loop leaves pending for us. The wait wakes on any change to the session
 * DB (the runner's Waker); its interval is only the fallback.
 */
const DEFAULT_TIMEOUT_S = 300;
const MAX_TIMEOUT_S = 7 * 24 * 3600;
const MAX_OPTIONS = 25;

const OptionSchema = z.union([
  label('option'),
  z.object({
    label: label('option label'),
    selectedLabel: label('selectedLabel').optional(),
    value: label('option value').optional(),
  }),
]);
type OptionInput = z.infer<typeof OptionSchema>;
interface QuestionOption {
  label: string;
  selectedLabel?: string;
  value: string;
}

export function registerQuestionTools(server: McpServer, ctx: ToolContext): void {
  const waiting = new WaitingUserState(ctx.db);

  server.registerTool(
    'ask_user_question',
    {
      description:
        'Ask the user a multiple-choice question and wait for the answer (this call blocks until they choose, or ' +
        "until the timeout). Use it before anything destructive or ambiguous. Returns the chosen option's value.",
      inputSchema: {
        title: label('title').describe('short card title, e.g. "Confirm deletion"'),
        question: text('question', 4000, 'ask a shorter question').describe('the question'),
        options: z
          .array(OptionSchema)
          .min(1, { error: 'options needs at least one choice' })
          .max(MAX_OPTIONS, { error: `options allows at most ${MAX_OPTIONS} choices` })
          .describe('the choices: strings, or {label, selectedLabel?, value?} (value defaults to label)'),
        timeout: z
          .number()
          .positive({ error: 'timeout must be more than 0 seconds' })
          .max(MAX_TIMEOUT_S, { error: `timeout must be at most ${MAX_TIMEOUT_S} seconds` })
          .optional()
          .describe(`seconds to wait for the answer (default ${DEFAULT_TIMEOUT_S})`),
      },
    },
    ({ title, question, options, timeout = DEFAULT_TIMEOUT_S }, extra) => {
      const asked: Question = { title, question, options: normaliseOptions(options), timeoutS: timeout };
      const call = ask(ctx, waiting, asked, AbortSignal.any([extra.signal, ctx.shutdown]));
      ctx.blocking.add(call);
      return call.finally(() => ctx.blocking.delete(call));
    },
  );
}

interface Question {
  title: string;
  question: string;
  options: QuestionOption[];
  timeoutS: number;
}

async function ask(ctx: ToolContext, waiting: WaitingUserState, q: Question, signal: AbortSignal) {
  const { db, config, log } = ctx;
  const questionId = randomUUID();
  // Watch before writing the question, so an answer written right after it cannot slip past the wait.
  const waker = new Waker(config.paths.root, config.wake);
  const wake = (): void => waker.notify();
  signal.addEventListener('abort', wake);
  const started = Date.now();
  try {
    insertOutbound(db, {
      kind: 'chat',
      // expiresAt: until when an answer is taken here; a later one reaches the agent as a message (src/db/questions.ts).
      content: {
        operation: 'ask_question',
        questionId,
        title: q.title,
        question: q.question,
        options: q.options,
        expiresAt: new Date(started + q.timeoutS * 1000).toISOString(),
      },
      routing: batchRouting(db),
    });
    waiting.enter();
    log.info(`question ${questionId} asked; waiting up to ${q.timeoutS} s`);
    try {
      const selected = await waitForAnswer(ctx, waker, questionId, started + q.timeoutS * 1000, q.timeoutS, signal);
      log.info(`question ${questionId} answered in ${Date.now() - started} ms`);
      const chosen = q.options.find((option) => option.value === selected || option.label === selected);
      const shown = chosen && chosen.label !== selected ? ` (${chosen.label})` : '';
      return textResult(`The user chose: ${selected}${shown}`);
    } finally {
      waiting.leave();
    }
  } finally {
    signal.removeEventListener('abort', wake);
    waker.close();
  }
}

function normaliseOptions(options: OptionInput[]): QuestionOption[] {
  const normalised = options.map((option): QuestionOption => {
    if (typeof option === 'string') return { label: option, value: option };
    return { label: option.label, value: option.value ?? option.label, ...(option.selectedLabel && { selectedLabel: option.selectedLabel }) };
  });
  const values = new Set<string>();
  for (const { value } of normalised) {
    if (values.has(value)) throw new PincerError('invalid-input', `two options have the value "${value}": each choice needs its own`);
    values.add(value);
  }
  return normalised;
}

async function waitForAnswer(ctx: ToolContext, waker: Waker, questionId: string, deadline: number, timeoutS: number, signal: AbortSignal): Promise<string> {
  for (;;) {
    // Time first, then the last read: an answer the host accepted before the deadline is always taken here.
    const left = deadline - Date.now();
    const answer = takeAnswer(ctx.db, questionId);
    if (answer !== undefined) return answer;
    if (signal.aborted) throw new PincerError('cancelled', 'the question was cancelled before the user answered');
    if (left <= 0) {
      throw new PincerError('timeout', `the user did not answer within ${timeoutS} s; ask again later or go on without an answer`);
    }
    await waker.wait(Math.min(left, ctx.config.fallbackMs));
  }
}

/**
 * `runner_state.state` is `waiting_user` while at least one question of this server is open, then goes back to what
 * it was — but only if it is still `waiting_user`: a state the runner set meanwhile (idle, stopping) wins.
 */
class WaitingUserState {
  private open = 0;
  private previous: RunnerStateName | null = null;

  constructor(private readonly db: Database.Database) {}

  enter(): void {
    if (this.open++ > 0) return;
    const state = readRunnerState(this.db)?.state;
    if (state === 'busy' || state === 'idle' || state === 'starting') {
      if (swapRunnerStateName(this.db, state, 'waiting_user')) this.previous = state;
    }
  }

  leave(): void {
    if (--this.open > 0) return;
    if (this.previous) swapRunnerStateName(this.db, 'waiting_user', this.previous);
    this.previous = null;
  }
}
