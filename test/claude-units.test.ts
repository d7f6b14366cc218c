import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ModelDeadline } from '../src/providers/claude/deadline.js';
import { classifyApiError, classifyErrorText } from '../src/providers/claude/errors.js';
import { scrubCommand, secretVariableNames } from '../src/providers/claude/hooks.js';
import { isOnResumeChain, parseTranscript, summarySource } from '../src/providers/claude/transcript.js';

/** The Claude provider's pure pieces: error classification, secret scrubbing, transcript naming. */
describe('Claude error classification', () => {
  it.each([
    ['authentication_failed', 401, 'auth'],
    ['rate_limit', 429, 'quota'],
    ['billing_error', 402, 'quota'],
    ['overloaded', 529, 'overloaded'],
    ['server_error', 500, 'server'],
    ['unknown', null, 'transport'],
    ['unknown', 503, 'server'],
    ['model_not_found', 404, 'invalid_request'],
  ] as const)('api_retry error %s with status %s is %s', (error, status, code) => {
    expect(classifyApiError(error, status)).toBe(code);
  });

  it.each([
    ['API Error: 500 fake api_error. This is a server-side issue', 'server'],
    ['API Error: Request rejected (429) · fake rate_limit_error', 'quota'],
    ['API Error: 401 {"type":"error"}', 'auth'],
    ['API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)', 'transport'],
    ['Invalid API key · Please run /login', 'auth'],
    ['Claude Code process exited with code 1', 'crash'],
    ['something odd', 'unknown'],
  ] as const)('error text %j is %s', (text, code) => {
    expect(classifyErrorText(text)).toBe(code);
  });
});

describe('Bash secret scrubbing', () => {
  it('unsets the Claude credentials and anything named like a secret, nothing else', () => {
    const names = secretVariableNames({
      ANTHROPIC_API_KEY: 'k',
      GITHUB_TOKEN: 't',
      DB_PASSWORD: 'p',
      AWS_SECRET_ACCESS_KEY: 's',
      PATH: '/bin',
      GIT_AUTHOR_NAME: 'me',
      TOKENIZER_MODE: 'x',
      'BAD-NAME_TOKEN': 'y',
    });
    expect(names).toEqual(['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'CLAUDE_CODE_OAUTH_TOKEN', 'DB_PASSWORD', 'GITHUB_TOKEN']);
    expect(scrubCommand('ls -la', ['A_TOKEN', 'B_KEY'])).toBe('unset A_TOKEN B_KEY 2>/dev/null; ls -la');
  });
});

describe('transcript archive names', () => {
  it('names the archive after the first prompt without its markup', () => {
    const jsonl = [
      JSON.stringify({
        type: 'user',
        message: {
          role: 'user',
          content: '<context timezone="UTC"/>\n<messages>\n<message id="3" sender="bob" time="x">Plan the Q3 offsite, please!</message>\n</messages>',
        },
      }),
      JSON.stringify({
        type: 'assistant',
        message: {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Sure.' },
            { type: 'thinking', thinking: 'hidden' },
          ],
        },
      }),
      JSON.stringify({ type: 'user', isMeta: true, message: { role: 'user', content: 'meta, skipped' } }),
      'not json',
    ].join('\n');
    const transcript = parseTranscript(jsonl);
    expect(transcript.turns).toEqual([
      { role: 'user', text: expect.stringContaining('Plan the Q3 offsite'), at: undefined },
      { role: 'assistant', text: 'Sure.', at: undefined },
    ]);
    expect(summarySource(transcript)).toBe('Plan the Q3 offsite, please!');
  });
});

describe('resume points', () => {
  const line = (uuid: string, parentUuid: string | null, extra: Record<string, unknown> = {}) => JSON.stringify({ type: 'user', uuid, parentUuid, ...extra });
  const jsonl = [
    line('a', null),
    line('b', 'a'),
    line('side', 'b', { isSidechain: true }),
    line('boundary', null, { type: 'system', subtype: 'compact_boundary' }),
    line('summary', 'boundary'),
    line('c', 'summary'),
    '{"type":"last-prompt","lastPrompt":"x"}',
  ].join('\n');

  it.each([
    ['c', true],
    ['summary', true],
    ['boundary', true],
    ['b', false], // compacted away
    ['side', false],
    ['unknown', false],
  ] as const)('%s is on the chain Claude Code resumes: %s', (uuid, expected) => {
    expect(isOnResumeChain(jsonl, uuid)).toBe(expected);
  });
});

describe('the model deadline', () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  // Just the fields the deadline reads, in the SDK's message shapes.
  const message = (value: object): SDKMessage => value as SDKMessage;
  const init = message({ type: 'system', subtype: 'init' });
  const toolCall = message({ type: 'assistant', parent_tool_use_id: null, message: { content: [{ type: 'tool_use', id: 't1' }] } });
  const toolResult = message({ type: 'user', parent_tool_use_id: null, message: { content: [{ type: 'tool_result', tool_use_id: 't1' }] } });
  const result = message({ type: 'result' });

  it('runs while the model is awaited, not while a tool runs or between turns', () => {
    vi.useFakeTimers();
    const timeouts: string[] = [];
    const deadline = new ModelDeadline(100, (ms, phase) => timeouts.push(`${phase} ${ms}`), 1000);
    deadline.promptSent();
    vi.advanceTimersByTime(1050); // starting Claude Code gets the start-up allowance
    deadline.observe(init);
    deadline.observe(toolCall);
    vi.advanceTimersByTime(5000); // a long tool
    deadline.promptSent(); // a follow-up pushed while the tool runs does not start the clock
    vi.advanceTimersByTime(5000);
    expect(timeouts).toEqual([]);
    deadline.observe(toolResult);
    deadline.observe(result);
    vi.advanceTimersByTime(5000); // idle between turns
    expect(timeouts).toEqual([]);
    deadline.promptSent();
    vi.advanceTimersByTime(100);
    expect(timeouts).toEqual(['model 100']);
    deadline.stop();
  });

  it('allows the start-up time before the first message', () => {
    vi.useFakeTimers();
    const timeouts: string[] = [];
    const deadline = new ModelDeadline(100, (ms, phase) => timeouts.push(`${phase} ${ms}`), 1000);
    deadline.promptSent();
    vi.advanceTimersByTime(1100);
    expect(timeouts).toEqual(['startup 1100']);
  });
});
