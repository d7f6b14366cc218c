/**
 * The little Markdown a skill or prompt file needs: an optional `---` frontmatter block of `key: value` lines
 * (`name`, `description`; quotes trimmed) and the body after it.
 */
export interface MarkdownFile {
  attributes: Record<string, string>;
  body: string;
}

export function parseMarkdownFile(text: string): MarkdownFile {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/.exec(text);
  if (!match) return { attributes: {}, body: text.trim() };
  const attributes: Record<string, string> = {};
  for (const line of match[1]!.split(/\r?\n/)) {
    const pair = /^([A-Za-z][\w-]*):\s*(.*)$/.exec(line);
    if (pair) attributes[pair[1]!.toLowerCase()] = pair[2]!.trim().replace(/^(['"])(.*)\1$/, '$2');
  }
  return { attributes, body: text.slice(match[0].length).trim() };
}

/** The first paragraph of a body, on one line, without a leading heading marker. */
export function firstParagraph(body: string): string {
  const paragraph = body.split(/\r?\n\s*\r?\n/).find((p) => p.trim().length > 0) ?? '';
  return paragraph
    .replace(/^#+\s*/, '')
    .replace(/\s+/g, ' ')
    .trim();
}
