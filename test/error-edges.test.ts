import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import noSilentCatch from '../scripts/eslint/no-silent-catch.js';
import { chatNotice, cliReport, httpReply, toolErrorText } from '../src/shared/error-edges.js';
import { ERROR_CODES, PincerError, type ErrorCode } from '../src/shared/errors.js';
import { DISK_FULL_NOTICE, failedMessageNotice } from '../src/host/errors.js';

/** Every code of the vocabulary at every edge: the HTTP status, the MCP tool text, the CLI exit code, the chat notice. */
const EXPECTED: Record<ErrorCode, { http: number; exit: number; retry: boolean }> = {
  'invalid-input': { http: 400, exit: 2, retry: false },
  'not-found': { http: 404, exit: 2, retry: false },
  'unknown-conversation': { http: 404, exit: 2, retry: false },
  'unknown-group': { http: 404, exit: 2, retry: false },
  config: { http: 500, exit: 2, retry: false },
  unauthorized: { http: 401, exit: 2, retry: false },
  forbidden: { http: 403, exit: 2, retry: false },
  conflict: { http: 409, exit: 2, retry: false },
  'too-large': { http: 413, exit: 2, retry: false },
  'outside-workspace': { http: 400, exit: 2, retry: false },
  quarantined: { http: 503, exit: 2, retry: false },
  'over-budget': { http: 429, exit: 2, retry: true },
  'not-ready': { http: 503, exit: 2, retry: true },
  'disk-full': { http: 507, exit: 2, retry: true },
  busy: { http: 503, exit: 2, retry: true },
  timeout: { http: 504, exit: 2, retry: true },
  cancelled: { http: 503, exit: 2, retry: true },
  unavailable: { http: 503, exit: 2, retry: true },
  delivery: { http: 502, exit: 2, retry: true },
  internal: { http: 500, exit: 1, retry: false },
};

/** The codes whose own message a chat notice quotes (it is about what the user sent). */
const QUOTED = new Set<ErrorCode>(['invalid-input', 'not-found', 'too-large', 'over-budget', 'disk-full']);

describe('the error vocabulary at each edge', () => {
  it('lists every code once, each with what it means', () => {
    expect(Object.keys(ERROR_CODES).sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const entry of Object.values(ERROR_CODES)) expect(entry.meaning.length).toBeGreaterThan(10);
  });

  it.each(Object.entries(EXPECTED) as [ErrorCode, (typeof EXPECTED)[ErrorCode]][])('%s', (code, want) => {
    const err = new PincerError(code, `the ${code} message.`, { field: 'x', retryAfterS: 7 });
    expect(err.retryable).toBe(want.retry);
    const reply = httpReply(err);
    expect(reply).toEqual({ status: want.http, body: { error: `the ${code} message.`, code, field: 'x' }, headers: { 'Retry-After': '7' } });
    expect(toolErrorText(err)).toBe(`the ${code} message.`);
    expect(cliReport(err, 'see pincer --help')).toEqual({ line: `pincer: the ${code} message. (see pincer --help)`, exit: want.exit });
    // a chat user hears the message only where it is about what they sent; otherwise the code's own sentence
    const notice = chatNotice(err);
    expect(notice.endsWith(' Please send it again later.')).toBe(want.retry);
    expect(notice.includes(`the ${code} message.`)).toBe(QUOTED.has(code));
    expect(notice.length).toBeGreaterThan(10);
  });

  it('anything that is not a PincerError is internal everywhere, and its detail stays out of HTTP replies', () => {
    const bug = new TypeError('cannot read properties of undefined (reading "x")\n    at somewhere');
    expect(httpReply(bug)).toEqual({ status: 500, body: { error: 'internal error', code: 'internal' }, headers: {} });
    expect(toolErrorText(bug)).toBe('internal error: cannot read properties of undefined (reading "x")');
    expect(cliReport(bug, 'h')).toEqual({ line: 'pincer: internal error: cannot read properties of undefined (reading "x")', exit: 1 });
    expect(failedMessageNotice(bug)).toBe(chatNotice(bug));
    expect(chatNotice(bug)).toBe('Something went wrong on the host; the administrator can find the detail in its log.');
  });
});

describe('what a chat hears when its message was not stored', () => {
  it('a full disk from SQLite or the file system, in its own words', () => {
    expect(failedMessageNotice(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' }))).toBe(DISK_FULL_NOTICE);
    expect(failedMessageNotice(Object.assign(new Error('no space'), { code: 'ENOSPC' }))).toBe(DISK_FULL_NOTICE);
  });

  it("nothing again for a budget the host already announced; the code's sentence for the rest, never its internals", () => {
    expect(failedMessageNotice(new PincerError('over-budget', 'over the daily budget'))).toBeUndefined();
    const quarantined = failedMessageNotice(new PincerError('quarantined', 'session s1 is quarantined: /home/x/sessions/s1/session.db is a link'));
    expect(quarantined).toBe(ERROR_CODES.quarantined.notice);
    expect(failedMessageNotice(new PincerError('invalid-input', 'the card has 3 buttons over the limit'))).toBe(
      'Your message was not taken: the card has 3 buttons over the limit',
    );
  });
});

RuleTester.describe = describe;
RuleTester.it = it;
RuleTester.itOnly = it.only;

describe('the lint rule against catches that drop the error', () => {
  new RuleTester({ languageOptions: { parser: tseslint.parser } }).run('no-silent-catch', noSilentCatch, {
    valid: [
      'try { f(); } catch (err) { log(err); }',
      'try { f(); } catch { // not there: nothing to read\n return null; }',
      'try { f(); } catch { throw new Error("x"); }',
      'p.catch((err) => log(err));',
      'p.catch(() => undefined); // the caller logged it',
    ],
    invalid: [
      { code: 'try { f(); } catch {}', errors: [{ messageId: 'silent' }] },
      { code: 'try { f(); } catch (err) { return null; }', errors: [{ messageId: 'silent' }] },
      { code: 'p.catch(() => undefined);', errors: [{ messageId: 'silent' }] },
    ],
  });
});
