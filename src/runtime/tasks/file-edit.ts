import { findMatch, lineOf, normalise, type Match, type MatchKind, type Normalisation, type Normalised } from './edit-match.js';
import { DEFAULT_RECEIPT_LIMITS, receiptsFor, type ReceiptLimits, type Receipts } from './edit-receipt.js';

/**
 * File-tool planning (the worker side of the built-in runtime's `edit` and `write`): pure edit matching, Unicode
 * normalisation and diff computation on a worker of the file-tool pool. A plan is the new content plus its receipts;
 * the caller keeps everything else — the per-file mutation queue, all file-system access, the confinement check, the
 * re-check after planning, and the read-back of the persisted bytes (src/providers/pincer/tools/edit.ts). Named
 * exports are the worker tasks.
 */
export interface Replacement {
  oldText: string;
  newText: string;
}

export interface EditPlanInput {
  /** the path as the agent sees it (for receipts and messages) */
  path: string;
  before: string;
  /** applied all or none, each located in the original content; they must not overlap */
  edits: Replacement[];
  maxBytes: number;
  limits?: Partial<ReceiptLimits>;
}

export interface PlannedReplacement {
  line: number;
  kind: MatchKind;
  normalisations: Normalisation[];
}

export type EditPlan =
  | ({ ok: true; after: string; replacements: PlannedReplacement[] } & Receipts)
  /** `error` is the whole message for the model; nothing was changed */
  | { ok: false; error: string };

export interface WritePlanInput {
  path: string;
  /** the current content, or null when the file does not exist */
  before: string | null;
  after: string;
  limits?: Partial<ReceiptLimits>;
}

export type FileTasks = {
  planEdit: { input: EditPlanInput; output: EditPlan };
  planWrite: { input: WritePlanInput; output: Receipts };
};

export function planEdit(input: EditPlanInput): EditPlan {
  const { path, before, edits } = input;
  if (edits.length === 0) return { ok: false, error: 'no edits given' };
  const crlf = dominantCrlf(before);
  let normalised: Normalised | undefined;
  const lazily = (): Normalised => (normalised ??= normalise(before));
  const located: { match: Match; newText: string; index: number }[] = [];
  for (const [index, edit] of edits.entries()) {
    const which = edits.length > 1 ? `edit ${index + 1}: ` : '';
    if (edit.oldText === '') return { ok: false, error: `${which}oldText is empty` };
    const result = findMatch(before, edit.oldText, lazily);
    if ('ambiguous' in result) {
      return {
        ok: false,
        error: `${which}oldText occurs ${result.ambiguous.length} times in ${path} (lines ${[...new Set(result.ambiguous)].join(', ')}); include more context so it matches once`,
      };
    }
    if ('missing' in result) return { ok: false, error: `${which}oldText not found in ${path} (not even after normalising quotes, spaces and line endings)` };
    const match = result.found;
    // A file written with CRLF keeps CRLF in what the edit puts in.
    const newText = crlf && match.kind === 'normalised' ? edit.newText.replace(/\r?\n/g, '\r\n') : edit.newText;
    located.push({ match, newText, index });
  }
  located.sort((a, b) => a.match.start - b.match.start);
  for (let i = 1; i < located.length; i++) {
    if (located[i]!.match.start < located[i - 1]!.match.end) {
      return { ok: false, error: `edits ${located[i - 1]!.index + 1} and ${located[i]!.index + 1} overlap in ${path}; nothing was changed` };
    }
  }
  let after = '';
  let cursor = 0;
  for (const { match, newText } of located) {
    after += before.slice(cursor, match.start) + newText;
    cursor = match.end;
  }
  after += before.slice(cursor);
  if (Buffer.byteLength(after) > input.maxBytes) return { ok: false, error: `the edited file would exceed ${input.maxBytes} bytes` };
  const replacements = located
    .sort((a, b) => a.index - b.index)
    .map(({ match }) => ({ line: lineOf(before, match.start), kind: match.kind, normalisations: match.normalisations }));
  return { ok: true, after, replacements, ...receiptsFor(path, before, after, { ...DEFAULT_RECEIPT_LIMITS, ...input.limits }) };
}

export function planWrite(input: WritePlanInput): Receipts {
  return receiptsFor(input.path, input.before ?? '', input.after, { ...DEFAULT_RECEIPT_LIMITS, ...input.limits });
}

function dominantCrlf(text: string): boolean {
  const crlf = text.split('\r\n').length - 1;
  const lf = text.split('\n').length - 1;
  return crlf > 0 && crlf * 2 >= lf;
}
