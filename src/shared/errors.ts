/**
 * Pincer's one error vocabulary. Every failure a user, a client or an agent may be told about is a `PincerError` with
 * one of the codes below; each edge (HTTP, MCP tool result, CLI, chat notice) translates it once, from `ERROR_CODES`
 * (see `src/shared/error-edges.ts`). A few areas keep a small subclass where the error carries more than a message
 * (each says why); nothing else extends `Error`.
 */

/**
 * What each code means, what it carries, whether asking again can help, its HTTP status and CLI exit code (2: the
 * user can fix it or try again; 1: a bug), and what a chat user is told (`notice`: `{message}` stands for the error's
 * own message, used only where that message is about what the user sent; other codes' messages may name internals).
 */
export const ERROR_CODES = {
  'invalid-input': {
    http: 400,
    exit: 2,
    retry: false,
    notice: 'Your message was not taken: {message}',
    meaning: 'a request, action or tool call whose input failed validation; `field` names the wrong field when one is',
  },
  'not-found': {
    http: 404,
    exit: 2,
    retry: false,
    notice: 'Your message was not taken: {message}',
    meaning: 'an id (session, task, question, file, message) that does not exist or is no longer active',
  },
  'unknown-conversation': {
    http: 404,
    exit: 2,
    retry: false,
    notice: 'This conversation is not connected to an agent yet; the administrator can bind it to an agent group.',
    meaning: 'an inbound message for a conversation with no binding and no default agent group',
  },
  'unknown-group': {
    http: 404,
    exit: 2,
    retry: false,
    notice: "This conversation's agent group no longer exists; the administrator can bind it to another.",
    meaning: 'an agent group id or name that the central DB does not hold',
  },
  config: {
    http: 500,
    exit: 2,
    retry: false,
    notice: "The agent is not set up correctly; the administrator can find the setting to fix in the host's log.",
    meaning: 'bad configuration (a flag, a setting, config.json); the message names the setting',
  },
  unauthorized: { http: 401, exit: 2, retry: false, notice: 'Your message was not taken: you are not signed in.', meaning: 'no credentials, or wrong ones' },
  forbidden: {
    http: 403,
    exit: 2,
    retry: false,
    notice: 'Your message was not taken: you may not do this here.',
    meaning: 'credentials that do not allow this (a scoped token, a non-admin)',
  },
  conflict: {
    http: 409,
    exit: 2,
    retry: false,
    notice: 'Your message met a change in progress and was not taken.',
    meaning: 'the thing changed under the request (an old launch epoch, an existing object)',
  },
  'too-large': {
    http: 413,
    exit: 2,
    retry: false,
    notice: 'Your message was not taken: {message}',
    meaning: 'a body, file or result over its size limit; the message says the limit',
  },
  'outside-workspace': {
    http: 400,
    exit: 2,
    retry: false,
    notice: "Your message was not taken: it names a file outside the agent's workspace.",
    meaning: 'a path that resolves outside the session folder, or through a link',
  },
  quarantined: {
    http: 503,
    exit: 2,
    retry: false,
    notice: "The agent's session is set aside because its files are unsafe to open; the administrator has to look at it.",
    meaning: 'the session folder is unsafe to open (a linked or unreadable session.db); left alone until an administrator moves it aside',
  },
  'over-budget': {
    http: 429,
    exit: 2,
    retry: true,
    notice: '{message}',
    meaning: 'the agent group reached a budget; the message says which limit and when it resets',
  },
  'not-ready': {
    http: 503,
    exit: 2,
    retry: true,
    notice: 'The agent cannot start yet: its model or credentials are not ready.',
    meaning: 'the agent group has no model-runtime generation to serve; asking again helps once its configuration or credentials change',
  },
  'disk-full': {
    http: 507,
    exit: 2,
    retry: true,
    notice: '{message}',
    meaning: "the host's disk is full: nothing was stored; `retryAfterS` says when to try again",
  },
  busy: {
    http: 503,
    exit: 2,
    retry: true,
    notice: 'The host is busy.',
    meaning: 'a limit on work at once was reached (runners, connections, a lock held elsewhere)',
  },
  timeout: {
    http: 504,
    exit: 2,
    retry: true,
    notice: 'The host did not get an answer in time.',
    meaning: 'no answer in time (a question, a server, a launch)',
  },
  cancelled: { http: 503, exit: 2, retry: true, notice: 'The host is shutting down.', meaning: 'the call was cancelled, or the process is shutting down' },
  unavailable: {
    http: 503,
    exit: 2,
    retry: true,
    notice: 'The agent cannot be reached now.',
    meaning: 'something Pincer depends on cannot be reached (a model server, a container engine, a cluster, a served session)',
  },
  delivery: {
    http: 502,
    exit: 2,
    retry: true,
    notice: 'A message could not be delivered.',
    meaning: 'a channel could not deliver a message (retried by delivery, then recorded as its delivery error)',
  },
  internal: {
    http: 500,
    exit: 1,
    retry: false,
    notice: 'Something went wrong on the host; the administrator can find the detail in its log.',
    meaning: 'a bug: what happened is in the log',
  },
} as const satisfies Record<string, { http: number; exit: number; retry: boolean; notice: string; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetails {
  /** for `invalid-input`: the field that is wrong, when one is. */
  field?: string;
  /** for retryable codes: seconds after which asking again may succeed. */
  retryAfterS?: number;
  cause?: unknown;
}

export class PincerError extends Error {
  readonly field?: string;
  readonly retryAfterS?: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    details: ErrorDetails = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'PincerError';
    if (details.field !== undefined) this.field = details.field;
    if (details.retryAfterS !== undefined) this.retryAfterS = details.retryAfterS;
  }

  /** Whether asking again (later, or after the reason changed) can succeed. */
  get retryable(): boolean {
    return ERROR_CODES[this.code].retry;
  }
}

/** A PincerError that also carries its area's finer `reason`, which callers branch on; its code follows from the reason. */
export class ReasonedError<R extends string> extends PincerError {
  constructor(
    readonly reason: R,
    code: ErrorCode,
    message: string,
    details?: ErrorDetails,
  ) {
    super(code, message, details);
  }
}

export function isPincerError(err: unknown, code?: ErrorCode): err is PincerError {
  return err instanceof PincerError && (code === undefined || err.code === code);
}

/** Whether `code` is one of the vocabulary's codes (a code read back from another process, e.g. a served session). */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}
