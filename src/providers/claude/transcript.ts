import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/**
 * Transcript archiving (seed "对话转录归档"): before Claude Code compacts a conversation, its JSONL transcript is
 * rendered as Markdown into `<agent folder>/conversations/{date}-{summary}.md`, so the full conversation stays
 * readable after the model only keeps a summary.
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
  message: z.looseObject({ role: z.string().optional(), content: z.union([z.string(), z.array(BlockSchema)]) }).optional(),
});
type Entry = z.infer<typeof EntrySchema>;
type Block = z.infer<typeof BlockSchema>;

export interface Turn {
  role: 'user' | 'assistant';
  text: string;
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
  const text = parts.filter((part) => part.trim().length > 0).join('\n\n').trim();
  return text ? { role: entry.type, text } : undefined;
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

/** `user`/`assistant` turns as Markdown; prompts keep their text, XML tags included, as the model saw them. */
export function renderTranscript(transcript: ParsedTranscript, date: string): string {
  const heading = transcript.title ? `# ${transcript.title}` : '# Conversation';
  const body = transcript.turns
    .map((turn) => `## ${turn.role === 'user' ? 'User' : 'Assistant'}\n\n${turn.text}`)
    .join('\n\n');
  return `${heading}\n\nArchived ${date} before the conversation was compacted.\n\n${body}\n`;
}

/** A file-name summary: the session title, else the first words of the first user prompt, without markup. */
export function summarySlug(transcript: ParsedTranscript): string {
  const source = transcript.title ?? transcript.turns.find((turn) => turn.role === 'user')?.text ?? '';
  const words = source
    .replace(/<[^>]*>/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter(Boolean)
    .slice(0, 6);
  return words.join('-').slice(0, 60) || 'conversation';
}

/**
 * Write the archive for `transcriptPath` into `conversationsDir`; returns the file written, or undefined when the
 * transcript has no turns. Never overwrites: a second archive on the same day gets `-2`, `-3`, ….
 */
export function archiveTranscript(transcriptPath: string, conversationsDir: string, now = new Date()): string | undefined {
  const transcript = parseTranscript(fs.readFileSync(transcriptPath, 'utf8'));
  if (transcript.turns.length === 0) return undefined;
  const date = now.toISOString().slice(0, 10);
  fs.mkdirSync(conversationsDir, { recursive: true });
  const base = `${date}-${summarySlug(transcript)}`;
  let file = path.join(conversationsDir, `${base}.md`);
  for (let n = 2; fs.existsSync(file); n += 1) file = path.join(conversationsDir, `${base}-${n}.md`);
  fs.writeFileSync(file, renderTranscript(transcript, date), { flag: 'wx' });
  return file;
}
