/**
 * Label values that come from agent-written rows (a turn's model and provider names, docs/observability.md): every
 * new value is a new time series in the host's memory and in every scrape, so an agent writing rows with made-up
 * model names could grow both without limit. The first `max` values are kept as they are; any later new one is
 * counted under `other`. The usage ledger keeps the real names (`pincer usage --by model`).
 */
export const MAX_LABEL_VALUES = 50;
export const OTHER_LABEL = 'other';
const MAX_LABEL_CHARS = 100;

export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(private readonly max = MAX_LABEL_VALUES) {}

  of(value: string): string {
    const v = value.slice(0, MAX_LABEL_CHARS);
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.max) return OTHER_LABEL;
    this.seen.add(v);
    return v;
  }
}
