import { parseMarkdown } from 'chat';

/**
 * Splitting an answer into platform messages. Adapters truncate what is over their platform's limit (Telegram cuts
 * at 4,096 characters and adds "..."), so a long answer is cut here first: at block boundaries of the markdown
 * (paragraphs, lists, code blocks) while the rendered chunk fits, then inside a block at line, then word, then
 * character boundaries. The limit applies to the text as the platform receives it (`render`, e.g. Telegram's
 * MarkdownV2 with its escapes), which can be longer than the markdown.
 */
export function splitMarkdown(markdown: string, limit: number, render: (markdown: string) => string): string[] {
  // Escaping at most doubles a text (one backslash per character): a text within half the limit fits unrendered.
  if (markdown.length * 2 <= limit) return [markdown];
  if (markdown.length <= limit && render(markdown).length <= limit) return [markdown];
  // Rendering (a markdown parse) costs milliseconds per KiB: chunks are filled by source length and each closed
  // chunk is rendered once; when escapes made it too long, blocks move on to the next chunk in proportion.
  const pieces = topLevelBlocks(markdown).flatMap((block) => (block.length <= limit / 2 ? [block] : splitBlock(block, limit, render)));
  const chunks: string[] = [];
  let current: string[] = [];
  const sourceSize = (blocks: string[]): number => blocks.reduce((sum, b) => sum + b.length, 0) + 2 * Math.max(0, blocks.length - 1);
  const close = (): void => {
    let carry: string[] = [];
    for (;;) {
      const rendered = current.length > 0 ? render(current.join('\n\n')).length : 0;
      if (rendered <= limit || current.length <= 1) break;
      const target = (limit / rendered) * sourceSize(current) * 0.98;
      do carry = [current.pop()!, ...carry];
      while (current.length > 1 && sourceSize(current) > target);
    }
    if (current.length > 0) chunks.push(current.join('\n\n'));
    current = carry;
    if (current.length > 0 && sourceSize(current) > limit) close();
  };
  for (const piece of pieces) {
    if (current.length > 0 && sourceSize(current) + 2 + piece.length > limit) close();
    current.push(piece);
  }
  while (current.length > 0) close();
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
