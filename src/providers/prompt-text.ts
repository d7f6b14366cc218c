import type { ContentBlock } from './types.js';

/**
 * A prompt as plain text, for SDKs that take only text (Codex, OpenCode). The runner saves attachments for these
 * providers to `downloads/` and references them by path, so content blocks are not expected here;
 * if some arrive anyway, non-text blocks are named rather than dropped silently.
 */
export function promptToText(prompt: string | ContentBlock[]): string {
  if (typeof prompt === 'string') return prompt;
  return prompt.map((block) => (block.type === 'text' ? block.text : `[${block.type} attachment not supported by this provider]`)).join('\n');
}
