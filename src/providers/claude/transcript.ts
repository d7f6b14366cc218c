import fs from 'node:fs';
import { z } from 'zod';
import { archiveTranscript as writeArchive, Transcript } from '../../shared/transcript-archive.js';

/**
 * Transcript archiving for Claude: before Claude Code compacts a conversation, its JSONL
 * transcript is read and written through the runner's archive writer, so Claude's archives look like every other
 * provider's: `<agent folder>/conversations/{date}-{summary}.md`.
 */

/** The parts of a transcript line we read; Claude Code writes many other kinds, which are skipped. */
const BlockSchema = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  name: z.string().optional(),
  input: z.unknown().optional(),
  content: z.unknown().optional(),
});
const EntrySchema = z.looseObject({
  type: z.string(),
  isSidechain: z.boolean().optional(),
  isMeta: z.boolean().optional(),
  timestamp: z.string().optional(),
  summary: z.string().optional(),
  title: z.string().optional(),
  customTitle: z.string().optional(),
  message: z.looseObject({ content: z.union([z.string(), z.array(BlockSchema)]) }).optional(),
});
type Entry = z.infer<typeof EntrySchema>;
type Block = z.infer<typeof BlockSchema>;

export interface Turn {
  role: 'user' | 'assistant';
  text: string;
  /** when Claude Code wrote it (ISO), if it said. */
  at?: string;
}

export interface ParsedTranscript {
  turns: Turn[];
  /** a title Claude Code stored for the session, if any. */
  title: string | undefined;
}

/** Read a transcript; lines that are not JSON or not user/assistant messages are skipped. */
export function parseTranscript(jsonl: string): ParsedTranscript {
  const turns: Turn[] = [];
  let title: string | undefined;
  for (const line of jsonl.split('\n')) {
    if (!line.trim()) continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      // a torn last line of the transcript is skipped
      continue;
    }
    const parsed = EntrySchema.safeParse(raw);
    if (!parsed.success) continue;
    const entry = parsed.data;
    if (entry.type === 'summary' && entry.summary) title = entry.summary;
    if ((entry.type === 'custom-title' || entry.type === 'ai-title') && (entry.customTitle || entry.title)) {
      title = entry.customTitle || entry.title;
    }
    const turn = toTurn(entry);
    if (turn) turns.push(turn);
  }
  return { turns, title };
}

function toTurn(entry: Entry): Turn | undefined {
  if ((entry.type !== 'user' && entry.type !== 'assistant') || entry.isSidechain || entry.isMeta || !entry.message) {
    return undefined;
  }
  const { content } = entry.message;
  const parts = typeof content === 'string' ? [content] : content.map(blockText);
  const text = parts
    .filter((part) => part.trim().length > 0)
    .join('\n\n')
    .trim();
  return text ? { role: entry.type, text, at: entry.timestamp } : undefined;
}

function blockText(block: Block): string {
  if (block.type === 'text') return block.text ?? '';
  if (block.type === 'tool_use') return `[tool ${block.name ?? '?'}: ${truncate(JSON.stringify(block.input ?? {}), 300)}]`;
  if (block.type === 'tool_result') {
    const text = typeof block.content === 'string' ? block.content : JSON.stringify(block.content ?? '');
    return `[tool result: ${truncate(text, 300)}]`;
  }
  if (block.type === 'image' || block.type === 'document') return `[${block.type}]`;
  return ''; // thinking and other internal blocks stay out of the archive
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/**
 * Whether `uuid` is on the chain Claude Code resumes: from the newest main-chain entry back through `parentUuid` to
 * the start, or to the last compaction (whose boundary has no parent). Resuming at an entry off that chain fails with
 * "No message found with message.uuid".
 */
export function isOnResumeChain(jsonl: string, uuid: string): boolean {
  const parents = new Map<string, string | null>();
  let leaf: string | undefined;
  for (const line of jsonl.split('\n')) {
    if (!line.includes('"uuid"')) continue;
    let entry: { uuid?: unknown; parentUuid?: unknown; isSidechain?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      // a torn last line of the transcript is skipped
      continue;
    }
    if (typeof entry.uuid !== 'string' || entry.isSidechain === true) continue;
    parents.set(entry.uuid, typeof entry.parentUuid === 'string' ? entry.parentUuid : null);
    leaf = entry.uuid;
  }
  for (let at = leaf, steps = 0; at && steps <= parents.size; at = parents.get(at) ?? undefined, steps++) {
    if (at === uuid) return true;
  }
  return false;
}

/** What the archive is named after: the session title, else the first user prompt without its markup. */
export function summarySource(transcript: ParsedTranscript): string {
  if (transcript.title) return transcript.title;
  const first = transcript.turns.find((turn) => turn.role === 'user')?.text ?? '';
  return (
    first
      .replace(/<[^>]*>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim() || 'conversation'
  );
}

/**
 * Archive the transcript at `transcriptPath` into `<agentDir>/conversations/`; returns the file written, or undefined
 * when the transcript has no turns. Never overwrites an earlier archive.
 */
export function archiveClaudeTranscript(transcriptPath: string, agentDir: string, timeZone: string): string | undefined {
  const parsed = parseTranscript(fs.readFileSync(transcriptPath, 'utf8'));
  const transcript = new Transcript(summarySource(parsed));
  const now = new Date().toISOString();
  for (const turn of parsed.turns) {
    transcript.turns.push({ at: turn.at ?? now, role: turn.role === 'user' ? 'prompt' : 'agent', text: turn.text });
  }
  return writeArchive(agentDir, transcript, timeZone);
}
