import { formatPatch, structuredPatch, type StructuredPatch } from 'diff';

/**
 * The two receipts of one prepared patch: a **display receipt** (a short preview of the changed lines with their line
 * numbers, what a person reads) and a **unified-diff receipt** (kept in the transcript; `patch -p1` applies it to
 * reproduce the file). Computed with the `diff` package. A diff that would be too large, or too costly to compute
 * (`maxEditLength`), and a near-total rewrite are summarised instead — and the receipt says so.
 */
export interface ReceiptLimits {
  /** changed lines the display receipt shows at most */
  previewLines: number;
  /** characters of unified diff kept at most; a larger one is summarised */
  maxDiffChars: number;
  /** the diff's edit length beyond which it is not computed (Myers' algorithm is O(N·D)) */
  maxEditLength: number;
  /** a rewrite that changes more than this share of a file's lines (of at least `rewriteMinLines`) is summarised */
  rewriteRatio: number;
  rewriteMinLines: number;
}

export const DEFAULT_RECEIPT_LIMITS: ReceiptLimits = { previewLines: 12, maxDiffChars: 64_000, maxEditLength: 20_000, rewriteRatio: 0.9, rewriteMinLines: 40 };

export interface Receipts {
  /** the short preview a person sees (and the model gets as the tool's answer) */
  display: string;
  /** the unified diff (`--- a/<path>` / `+++ b/<path>`), or undefined when it was summarised */
  unified: string | undefined;
  /** why `unified` is missing, in words */
  summarised?: string;
  added: number;
  removed: number;
}

export function receiptsFor(displayPath: string, before: string, after: string, limits: ReceiptLimits): Receipts {
  const lines = (t: string): number => (t === '' ? 0 : t.split('\n').length - (t.endsWith('\n') ? 1 : 0));
  const patch = structuredPatch(`a/${displayPath}`, `b/${displayPath}`, before, after, undefined, undefined, {
    context: 3,
    maxEditLength: limits.maxEditLength,
  });
  if (!patch) {
    const summarised = `the diff was not computed: more than ${limits.maxEditLength} lines changed`;
    return {
      display: `${displayPath}: ${lines(before)} → ${lines(after)} lines (${summarised})`,
      unified: undefined,
      summarised,
      added: lines(after),
      removed: lines(before),
    };
  }
  let added = 0;
  let removed = 0;
  for (const hunk of patch.hunks) {
    for (const line of hunk.lines) {
      if (line.startsWith('+')) added++;
      else if (line.startsWith('-')) removed++;
    }
  }
  const preview = previewOf(patch, limits.previewLines);
  const head = `${displayPath}: +${added} −${removed} lines`;
  const total = Math.max(lines(before), 1);
  if (lines(before) >= limits.rewriteMinLines && removed / total > limits.rewriteRatio) {
    const summarised = `a near-total rewrite (${removed} of ${lines(before)} lines replaced): unified diff summarised`;
    return { display: `${head} (${summarised})\n${preview}`, unified: undefined, summarised, added, removed };
  }
  const unified = formatPatch(patch);
  if (unified.length > limits.maxDiffChars) {
    const summarised = `the unified diff is ${unified.length} characters (limit ${limits.maxDiffChars}): summarised`;
    return { display: `${head} (${summarised})\n${preview}`, unified: undefined, summarised, added, removed };
  }
  return { display: `${head}\n${preview}`, unified, added, removed };
}

/** Changed lines with their line numbers (old for removed, new for added), at most `max` of them. */
function previewOf(patch: StructuredPatch, max: number): string {
  const out: string[] = [];
  let hidden = 0;
  for (const hunk of patch.hunks) {
    let oldLine = hunk.oldStart;
    let newLine = hunk.newStart;
    for (const line of hunk.lines) {
      const sign = line[0];
      if (sign === '\\') continue;
      if (sign === ' ') {
        oldLine++;
        newLine++;
        continue;
      }
      const number = sign === '-' ? oldLine++ : newLine++;
      if (out.length < max) out.push(`${String(number).padStart(5)} ${sign} ${clip(line.slice(1), 160)}`);
      else hidden++;
    }
  }
  if (hidden) out.push(`      … ${hidden} more changed lines`);
  return out.join('\n');
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
