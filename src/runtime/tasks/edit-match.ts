/**
 * Where an edit's `oldText` is in a file: an exact match first, then a match after normalisation — Unicode NFC,
 * curly vs straight quotes, non-breaking and other Unicode spaces, trailing whitespace at line ends, CRLF vs LF —
 * mapped back to the original text, so only the matched bytes are replaced and the rest of the file keeps its own
 * spelling. Pure functions of strings: they run on a worker of the file-tool pool (file-edit.ts).
 */
export type MatchKind = 'exact' | 'normalised';

/** What a normalised match had to look past, named in the receipt. */
export type Normalisation =
  'line endings (CRLF vs LF)' | 'curly vs straight quotes' | 'non-breaking or other Unicode spaces' | 'trailing whitespace' | 'Unicode normal form (NFC)';

export interface Match {
  start: number;
  end: number;
  kind: MatchKind;
  normalisations: Normalisation[];
}

export type MatchResult = { found: Match } | { missing: true } | { ambiguous: number[] };

const QUOTES: Record<string, string> = {
  '\u2018': "'",
  '\u2019': "'",
  '\u201a': "'",
  '\u201b': "'",
  '\u2032': "'",
  '\u201c': '"',
  '\u201d': '"',
  '\u201e': '"',
  '\u201f': '"',
  '\u2033': '"',
};
const SPACES = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\ufeff]/;
const TRAILING = /[ \t\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\ufeff]+$/;

/** A normalised text, with the original offsets of each of its characters. */
export interface Normalised {
  text: string;
  /** original offset where the character at each index begins */
  starts: number[];
  /** original offset just after the character at each index */
  ends: number[];
}

/** A character cluster: a base with its combining marks, so NFC never changes the count of clusters. */
const CLUSTER = /\P{M}\p{M}*|\p{M}+/gsu;

export function normalise(original: string): Normalised {
  const starts: number[] = [];
  const ends: number[] = [];
  let text = '';
  const push = (chars: string, start: number, end: number): void => {
    for (const ch of chars) {
      text += ch;
      starts.push(start);
      ends.push(end);
    }
  };
  let offset = 0;
  for (const rawLine of original.split('\n')) {
    const lineStart = offset;
    const hasCr = rawLine.endsWith('\r');
    const content = hasCr ? rawLine.slice(0, -1) : rawLine;
    const kept = content.replace(TRAILING, '');
    for (const m of kept.matchAll(CLUSTER)) {
      const start = lineStart + m.index;
      push(foldCluster(m[0]), start, start + m[0].length);
    }
    offset = lineStart + rawLine.length;
    if (offset < original.length) {
      // the newline stands for `\r\n` or `\n`
      push('\n', lineStart + kept.length, offset + 1);
      offset += 1;
    }
  }
  return { text, starts, ends };
}

function foldCluster(cluster: string): string {
  const nfc = cluster.normalize('NFC');
  const quote = QUOTES[nfc];
  if (quote) return quote;
  if (nfc.length === 1 && SPACES.test(nfc)) return ' ';
  return nfc;
}

/** Line numbers (1-based) of each offset. */
export function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

function allIndexes(haystack: string, needle: string): number[] {
  const found: number[] = [];
  for (let i = haystack.indexOf(needle); i >= 0; i = haystack.indexOf(needle, i + 1)) found.push(i);
  return found;
}

/** Find `oldText` in `content` once: exact, else normalised. Several matches of the first kind that matches: ambiguous. */
export function findMatch(content: string, oldText: string, normalisedContent: () => Normalised = () => normalise(content)): MatchResult {
  const exact = allIndexes(content, oldText);
  if (exact.length === 1) return { found: { start: exact[0]!, end: exact[0]! + oldText.length, kind: 'exact', normalisations: [] } };
  if (exact.length > 1) return { ambiguous: exact.map((i) => lineOf(content, i)) };
  const file = normalisedContent();
  // The needle is normalised the same way, except that a final newline stays (it is part of what to replace).
  const needle = normalise(oldText).text;
  if (needle === '') return { missing: true };
  const hits = allIndexes(file.text, needle);
  if (hits.length === 0) return { missing: true };
  if (hits.length > 1) return { ambiguous: hits.map((i) => lineOf(content, file.starts[i]!)) };
  const first = hits[0]!;
  const start = file.starts[first]!;
  const end = file.ends[first + needle.length - 1]!;
  return { found: { start, end, kind: 'normalised', normalisations: whatDiffered(content.slice(start, end), oldText) } };
}

/** Which normalisations separated the file's text from the model's. */
function whatDiffered(fileText: string, oldText: string): Normalisation[] {
  const kinds: Normalisation[] = [];
  if (fileText.includes('\r\n') !== oldText.includes('\r\n')) kinds.push('line endings (CRLF vs LF)');
  const quotes = new RegExp(`[${Object.keys(QUOTES).join('')}]`);
  if (quotes.test(fileText) || quotes.test(oldText)) kinds.push('curly vs straight quotes');
  if (SPACES.test(fileText) || SPACES.test(oldText)) kinds.push('non-breaking or other Unicode spaces');
  const trailing = (t: string): boolean => t.split(/\r?\n/).some((line) => TRAILING.test(line));
  if (trailing(fileText) !== trailing(oldText) || (trailing(fileText) && stripTrailing(fileText) !== stripTrailing(oldText))) kinds.push('trailing whitespace');
  if (fileText.normalize('NFC') !== fileText || oldText.normalize('NFC') !== oldText) kinds.push('Unicode normal form (NFC)');
  return kinds;
}

function stripTrailing(text: string): string {
  return text
    .split(/\r?\n/)
    .map((line) => line.replace(TRAILING, ''))
    .join('\n');
}
