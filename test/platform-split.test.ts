import { describe, expect, it } from 'vitest';
import { splitMarkdown } from '../src/host/platforms/split.js';

/** Splitting an answer at a platform's limit, measured on the text as the platform receives it. */
const identity = (markdown: string): string => markdown;
/** Like Telegram's MarkdownV2: every `.` and `-` gains a backslash, so the sent text is longer than the markdown. */
const escaping = (markdown: string): string => markdown.replace(/([.-])/g, '\\$1');

describe('splitMarkdown', () => {
  it('leaves a text that fits alone', () => {
    expect(splitMarkdown('short *answer*', 100, identity)).toEqual(['short *answer*']);
  });

  it.each([
    ['as sent', identity],
    ['with escapes that lengthen it', escaping],
  ])('cuts at paragraph boundaries, every part within the limit %s, nothing lost', (_name, render) => {
    const paragraphs = Array.from({ length: 60 }, (_, i) => `Paragraph ${i}. It has some words - and dots...`);
    const parts = splitMarkdown(paragraphs.join('\n\n'), 500, render);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(render(part).length).toBeLessThanOrEqual(500);
    expect(parts.join('\n\n')).toBe(paragraphs.join('\n\n'));
  });

  it('cuts one long paragraph at words, and a word longer than the limit at characters', () => {
    const words = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    const parts = splitMarkdown(words, 100, identity);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(100);
    expect(parts.join(' ')).toBe(words);
    const blob = 'x'.repeat(250);
    expect(splitMarkdown(blob, 100, identity)).toEqual(['x'.repeat(100), 'x'.repeat(100), 'x'.repeat(50)]);
  });

  it('keeps a code block whole when it fits a part', () => {
    const code = '```\n' + Array.from({ length: 10 }, (_, i) => `line ${i}`).join('\n') + '\n```';
    const text = `${'Intro words. '.repeat(20)}\n\n${code}\n\nOutro.`;
    const parts = splitMarkdown(text, 300, identity);
    expect(parts.some((part) => part.includes(code))).toBe(true);
  });
});
