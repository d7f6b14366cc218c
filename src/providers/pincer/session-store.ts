import type { AgentMessage } from '@mariozechner/pi-agent-core';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/**
 * The built-in runtime's conversation, persisted in the session folder (`.pincer-sessions/<id>.jsonl`) so a restarted
 * runner resumes it: one JSON line per message as the agent loop finishes it, and one per compaction (the summary and
 * how many recent messages it kept). Lines are only appended; replaying them gives the context to continue from.
 * The file sits in the agent's sandbox, so every line is validated and a bad one is skipped with a warning.
 */
const MessageLine = z.object({ type: z.literal('message'), message: z.looseObject({ role: z.enum(['user', 'assistant', 'toolResult']) }) });
const CompactionLine = z.object({ type: z.literal('compaction'), summary: z.string(), kept: z.number().int().nonnegative(), at: z.string() });
const HeaderLine = z.object({ type: z.literal('session'), id: z.string(), created: z.string() });
const Line = z.discriminatedUnion('type', [MessageLine, CompactionLine, HeaderLine]);

export const SESSIONS_DIR = '.pincer-sessions';

/** The summary that stands for compacted history, as the model sees it. */
export function summaryMessage(summary: string, at = Date.now()): AgentMessage {
  return {
    role: 'user',
    content: [{ type: 'text', text: `<conversation-summary>\nThe earlier conversation was compacted. Summary:\n\n${summary}\n</conversation-summary>` }],
    timestamp: at,
  };
}

export class SessionStore {
  private constructor(
    readonly id: string,
    readonly file: string,
  ) {}

  /** A new conversation file under `workspace`. */
  static create(workspace: string): SessionStore {
    const id = randomUUID();
    const store = new SessionStore(id, fileFor(workspace, id));
    fs.mkdirSync(path.dirname(store.file), { recursive: true, mode: 0o700 });
    store.append({ type: 'session', id, created: new Date().toISOString() });
    return store;
  }

  /** The conversation `id`, or undefined when there is no such file (or the id is not one of ours). */
  static open(workspace: string, id: string): SessionStore | undefined {
    if (!/^[0-9a-f-]{36}$/.test(id)) return undefined;
    const file = fileFor(workspace, id);
    return fs.existsSync(file) ? new SessionStore(id, file) : undefined;
  }

  /** Replay the file into the context to continue from; `warn` hears of each line skipped. */
  load(warn: (message: string) => void): AgentMessage[] {
    let messages: AgentMessage[] = [];
    const lines = fs.readFileSync(this.file, 'utf8').split('\n');
    lines.forEach((raw, index) => {
      if (!raw.trim()) return;
      let parsed;
      try {
        parsed = Line.safeParse(JSON.parse(raw));
      } catch {
        // a torn line of the session file is skipped
        parsed = undefined;
      }
      if (!parsed?.success) {
        warn(`${this.file}:${index + 1}: not a conversation line; skipped`);
        return;
      }
      const line = parsed.data;
      if (line.type === 'message') messages.push(line.message as unknown as AgentMessage);
      else if (line.type === 'compaction') messages = [summaryMessage(line.summary, Date.parse(line.at)), ...messages.slice(messages.length - line.kept)];
    });
    return messages;
  }

  appendMessage(message: AgentMessage): void {
    this.append({ type: 'message', message });
  }

  appendCompaction(summary: string, kept: number): void {
    this.append({ type: 'compaction', summary, kept, at: new Date().toISOString() });
  }

  private append(line: z.input<typeof Line> | { type: 'message'; message: AgentMessage }): void {
    fs.appendFileSync(this.file, JSON.stringify(line) + '\n', { mode: 0o600 });
  }
}

function fileFor(workspace: string, id: string): string {
  return path.join(workspace, SESSIONS_DIR, `${id}.jsonl`);
}
