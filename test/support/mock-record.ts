import fs from 'node:fs';
import path from 'node:path';
import type { ContentBlock, McpServerConfig } from '../../src/providers/types.js';
import type { TestSession } from './session.js';

/** What the mock provider was given, one entry per query and per push (MOCK_RECORD_FILE). */
export interface Recorded {
  type: 'query' | 'push';
  prompt: string | ContentBlock[];
  sessionId?: string;
  resumeAt?: string;
  systemPrompt?: string;
  additionalDirectories?: string[];
  mcpServers?: Record<string, McpServerConfig>;
}

/** The record file for a session; pass it to the runner as MOCK_RECORD_FILE. */
export function recordFile(session: TestSession): string {
  return path.join(session.paths.root, 'mock-record.jsonl');
}

export function recorded(session: TestSession): Recorded[] {
  const file = recordFile(session);
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Recorded);
}

/** The prompt's text, with non-text blocks shown as `[image]`, `[document]`. */
export function promptText(entry: Recorded): string {
  if (typeof entry.prompt === 'string') return entry.prompt;
  return entry.prompt.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
}
