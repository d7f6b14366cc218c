import { ReasonedError, type ErrorCode } from '../../shared/errors.js';
/**
 * How the Claude provider classifies failures. Every failure becomes one `error` ProviderEvent whose `classification`
 * is a `ClaudeErrorCode`, so the runner's `last_error` (and the host's retry decision) says what went wrong.
 *
 * Codes and what they mean:
 * - `auth`: the API rejected the credentials (HTTP 401/403, OAuth or account problems). Not retryable: fix the key.
 * - `quota`: rate limited (HTTP 429), billing, or a subscription limit reached. Not retryable now.
 * - `overloaded`: the API is overloaded (HTTP 529). Retryable.
 * - `server`: the API failed (HTTP 5xx). Retryable.
 * - `transport`: no HTTP answer at all (connection refused, DNS, TLS, reset). Retryable.
 * - `timeout`: the model did not answer within the provider's deadline (`PINCER_PROVIDER_TIMEOUT_MS`). Retryable.
 * - `invalid_request`: the API refused the request (HTTP 400/404, unknown model, too long). Not retryable as is.
 * - `crash`: the Claude Code process failed or exited unexpectedly. Retryable.
 * - `execution`: Claude Code ended the turn with an error of its own (max turns, budget, resume refused).
 * - `unknown`: anything else. Retryable.
 */
export type ClaudeErrorCode = 'auth' | 'quota' | 'overloaded' | 'server' | 'transport' | 'timeout' | 'invalid_request' | 'crash' | 'execution' | 'unknown';

const RETRYABLE: Record<ClaudeErrorCode, boolean> = {
  auth: false,
  quota: false,
  overloaded: true,
  server: true,
  transport: true,
  timeout: true,
  invalid_request: false,
  crash: true,
  execution: false,
  unknown: true,
};

const CLAUDE_CODE: Record<ClaudeErrorCode, ErrorCode> = {
  auth: 'unauthorized',
  quota: 'over-budget',
  overloaded: 'busy',
  server: 'unavailable',
  transport: 'unavailable',
  timeout: 'timeout',
  invalid_request: 'invalid-input',
  crash: 'internal',
  execution: 'internal',
  unknown: 'internal',
};

/** Kept as a subclass: the runner records Claude's own classification (`reason`) and its retry rule. */
export class ClaudeProviderError extends ReasonedError<ClaudeErrorCode> {
  constructor(reason: ClaudeErrorCode, message: string) {
    super(reason, CLAUDE_CODE[reason], message);
    this.name = 'ClaudeProviderError';
  }

  override get retryable(): boolean {
    return RETRYABLE[this.reason];
  }
}

export function isClaudeProviderError(err: unknown): err is ClaudeProviderError {
  return err instanceof ClaudeProviderError;
}

/**
 * The SDK's `SDKAssistantMessageError` (on `api_retry` messages and synthetic assistant messages) and the HTTP status,
 * as a code. A missing status with an `unknown` error means no HTTP answer came back: a transport failure.
 */
export function classifyApiError(error: string | undefined, status: number | null | undefined): ClaudeErrorCode {
  switch (error) {
    case 'authentication_failed':
    case 'oauth_org_not_allowed':
    case 'account_on_hold':
    case 'verification_required':
    case 'cloud_credential_error':
      return 'auth';
    case 'rate_limit':
    case 'billing_error':
      return 'quota';
    case 'overloaded':
      return 'overloaded';
    case 'server_error':
      return 'server';
    case 'invalid_request':
    case 'model_not_found':
    case 'max_output_tokens':
      return 'invalid_request';
  }
  return classifyStatus(status);
}

export function classifyStatus(status: number | null | undefined): ClaudeErrorCode {
  if (status === null || status === undefined) return 'transport';
  if (status === 401 || status === 403) return 'auth';
  if (status === 429 || status === 402) return 'quota';
  if (status === 529) return 'overloaded';
  if (status >= 500) return 'server';
  if (status >= 400) return 'invalid_request';
  return 'unknown';
}

/**
 * Classify an error text (an `is_error` result's text, a thrown error's message) by the status or cause it names.
 * Claude Code words these as `API Error: 500 …`, `Request rejected (429)`, `Connection refused … (ECONNREFUSED)`.
 */
export function classifyErrorText(text: string): ClaudeErrorCode {
  const status = /API Error: (\d{3})\b/.exec(text)?.[1] ?? /\((\d{3})\)/.exec(text)?.[1];
  if (status) return classifyStatus(Number(status));
  if (/ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|socket hang up|Connection (refused|error)/i.test(text)) {
    return 'transport';
  }
  if (/invalid api key|authenticat|\/login|unauthori[sz]ed/i.test(text)) return 'auth';
  if (/rate limit|usage limit|quota|credit balance/i.test(text)) return 'quota';
  if (/overloaded/i.test(text)) return 'overloaded';
  if (/exited with code|process (exited|terminated)|spawn|ENOENT|EPIPE/i.test(text)) return 'crash';
  return 'unknown';
}
