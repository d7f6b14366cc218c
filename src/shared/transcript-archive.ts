import fs from 'node:fs';
import path from 'node:path';
import { formatTime } from './time.js';

/**
 * Transcript archive, shared by the runner and the Claude provider's PreCompact hook: for
 * providers without a compaction hook the runner writes each query's
 * turns — prompts and results with their times — to `agent/conversations/{date}-{summary}.md`, readable by a person.
 */
export interface TranscriptTurn {
  at: string;
  role: 'prompt' | 'agent' | 'error';
  text: string;
}

export class Transcript {
  readonly turns: TranscriptTurn[] = [];

  constructor(readonly summarySource: string) {}

  add(role: TranscriptTurn['role'], text: string): void {
    this.turns.push({ at: new Date().toISOString(), role, text });
  }
}

/** A short file-name slug: lower-case ASCII words, at most 6 words / 40 characters. */
export function slugify(text: string): string {
  const words = text
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9\s-]/g, ' ')
    .split(/[\s-]+/)
    .filter(Boolean)
    .slice(0, 6);
  const slug = words.join('-').slice(0, 40).replace(/-+$/, '');
  return slug || 'conversation';
}

export function renderTranscript(transcript: Transcript, timeZone: string): string {
  const first = transcript.turns[0]?.at ?? new Date().toISOString();
  const lines = [`# Conversation ${formatTime(first, timeZone)} (${timeZone})`, ''];
  for (const turn of transcript.turns) {
    const heading = turn.role === 'prompt' ? 'Prompt' : turn.role === 'agent' ? 'Agent' : 'Error';
    lines.push(`## ${heading} · ${formatTime(turn.at, timeZone)}`, '', fence(turn.text), '');
  }
  return lines.join('\n');
}

/** Write the transcript; returns the file path. Never overwrites an earlier archive. */
export function archiveTranscript(agentDir: string, transcript: Transcript, timeZone: string): string | undefined {
  if (transcript.turns.length === 0) return undefined;
  const dir = path.join(agentDir, 'conversations');
  fs.mkdirSync(dir, { recursive: true });
  const date = formatTime(transcript.turns[0]!.at, timeZone).slice(0, 10);
  const base = `${date}-${slugify(transcript.summarySource)}`;
  let file = path.join(dir, `${base}.md`);
  for (let i = 2; fs.existsSync(file); i++) file = path.join(dir, `${base}-${i}.md`);
  fs.writeFileSync(file, renderTranscript(transcript, timeZone), { flag: 'wx' });
  return file;
}

/** A fence longer than any run of backticks inside, so the text shows as written. */
function fence(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}text\n${text}\n${ticks}`;
}
