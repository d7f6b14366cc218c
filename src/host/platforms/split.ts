import { parseMarkdown } from 'chat';

/**
 * Splitting an answer into platform messages. Adapters truncate what is over their platform's limit (Telegram cuts
 * at 4,096 characters and adds "..."), so a long answer is cut here first: at block boundaries of the markdown
 * (paragraphs, lists, code blocks) while the rendered chunk fits, then inside a block at line, then word, then
 * character boundaries. The limit applies to the text as the platform receives it (`render`, e.g. Telegram's
 * MarkdownV2 with its escapes), which can be longer than the markdown.
 */
export function splitMarkdown(markdown: string, limit: number, render: (markdown: string) => string): string[] {
  if (fits(markdown, limit, render)) return [markdown];
  const blocks = topLevelBlocks(markdown);
  const chunks: string[] = [];
  let current = '';
  for (const block of blocks) {
    const joined = current ? `${current}\n\n${block}` : block;
    if (fits(joined, limit, render)) {
      current = joined;
      continue;
    }
    if (current) chunks.push(current);
    current = '';
    if (fits(block, limit, render)) {
      current = block;
      continue;
    }
    const pieces = splitBlock(block, limit, render);
    current = pieces.pop() ?? '';
    chunks.push(...pieces);
  }
  if (current) chunks.push(current);
  return chunks.filter((chunk) => chunk.trim() !== '');
}

function fits(markdown: string, limit: number, render: (markdown: string) => string): boolean {
  // The markdown itself is a lower bound for most renderings; checking it first skips a render.
  return markdown.length <= limit * 4 && render(markdown).length <= limit;
}

/** The source text of each top-level markdown node, in order (so chunks keep the author's markdown exactly). */
function topLevelBlocks(markdown: string): string[] {
  const tree = parseMarkdown(markdown);
  const blocks: string[] = [];
  for (const node of tree.children) {
    const start = node.position?.start.offset;
    const end = node.position?.end.offset;
    if (start === undefined || end === undefined) return markdown.split(/\n{2,}/);
    blocks.push(markdown.slice(start, end));
  }
  return blocks.length > 0 ? blocks : [markdown];
}

/** One block over the limit: by lines, then words, then characters, each piece as long as it can be. */
function splitBlock(block: string, limit: number, render: (markdown: string) => string): string[] {
  for (const separator of ['\n', ' ']) {
    const parts = block.split(separator);
    if (parts.length < 2) continue;
    const pieces: string[] = [];
    let current = '';
    for (const part of parts) {
      const joined = current ? `${current}${separator}${part}` : part;
      if (fits(joined, limit, render)) {
        current = joined;
        continue;
      }
      if (current) pieces.push(current);
      if (fits(part, limit, render)) current = part;
      else {
        const hard = hardSplit(part, limit, render);
        current = hard.pop() ?? '';
        pieces.push(...hard);
      }
    }
    if (current) pieces.push(current);
    return pieces;
  }
  return hardSplit(block, limit, render);
}

/** No boundary left: the longest prefixes that fit (binary search on the rendered length). */
function hardSplit(text: string, limit: number, render: (markdown: string) => string): string[] {
  const pieces: string[] = [];
  let rest = text;
  while (rest.length > 0) {
    let low = 1;
    let high = Math.min(rest.length, limit);
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (render(rest.slice(0, mid)).length <= limit) low = mid;
      else high = mid - 1;
    }
    pieces.push(rest.slice(0, low));
    rest = rest.slice(low);
  }
  return pieces;
}
