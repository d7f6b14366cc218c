import { settingOrDefault } from '../../../shared/settings-load.js';
/**
 * Size limits of tool output: what a tool returns goes into every later model request, so a large file or a chatty
 * command is cut, saying where and how to see the rest.
 */
export interface ToolLimits {
  /** characters of output a tool returns at most */
  maxOutputChars: number;
  /** lines `read` returns at most per call */
  maxReadLines: number;
  /** bash: default and maximum timeout */
  bashTimeoutMs: number;
  bashMaxTimeoutMs: number;
  /** bytes `write` / `edit` accept at most */
  maxWriteBytes: number;
}

export function toolLimits(env: Record<string, string | undefined>): ToolLimits {
  const bashTimeoutMs = settingOrDefault(env, 'PINCER_BASH_TIMEOUT_MS');
  return {
    maxOutputChars: settingOrDefault(env, 'PINCER_TOOL_OUTPUT_CHARS'),
    maxReadLines: 2000,
    bashTimeoutMs,
    bashMaxTimeoutMs: Math.max(bashTimeoutMs, 600_000),
    maxWriteBytes: 5 * 1024 * 1024,
  };
}

/** Keep the head and the tail of `text` within `max` characters, with a note of what was left out. */
export function truncateMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.3);
  const tail = max - head;
  const omitted = text.length - head - tail;
  return `${text.slice(0, head)}\n… [${omitted} characters omitted] …\n${text.slice(text.length - tail)}`;
}
