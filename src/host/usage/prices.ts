import fs from 'node:fs';
import { z } from 'zod';
import type { ModelUsage } from '../../shared/usage.js';
import { PincerError } from '../../shared/errors.js';

/**
 * The host's price table, for turns whose provider reports tokens but no cost (Codex, some OpenCode models).
 * US dollars per million tokens, matched by the longest model-name prefix. The built-in rows are public list prices
 * of common models; `<home>/prices.json` (same shape) adds to them or replaces them. A model no row matches has no
 * cost: the ledger keeps its tokens and leaves the cost empty rather than guess.
 */
export interface Price {
  input: number;
  output: number;
  /** per million cache-read tokens; default: the input price. */
  cacheRead?: number;
  /** per million cache-write tokens; default: the input price. */
  cacheWrite?: number;
}

const BUILT_IN: Record<string, Price> = {
  'claude-opus-4-5': { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  'claude-opus-4': { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  'claude-sonnet-4': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-3-7-sonnet': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  'claude-haiku-4-5': { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  'claude-3-5-haiku': { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
  'gpt-5-nano': { input: 0.05, output: 0.4, cacheRead: 0.005 },
  'gpt-5-mini': { input: 0.25, output: 2, cacheRead: 0.025 },
  'gpt-5': { input: 1.25, output: 10, cacheRead: 0.125 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6, cacheRead: 0.1 },
  'gpt-4.1': { input: 2, output: 8, cacheRead: 0.5 },
  'gpt-4o-mini': { input: 0.15, output: 0.6, cacheRead: 0.075 },
  'gpt-4o': { input: 2.5, output: 10, cacheRead: 1.25 },
  o3: { input: 2, output: 8, cacheRead: 0.5 },
};

const perMillion = z.number().nonnegative().finite();
const PriceFile = z.record(
  z.string().min(1),
  z.object({ input: perMillion, output: perMillion, cacheRead: perMillion.optional(), cacheWrite: perMillion.optional() }).strict(),
);

/** A model's price as the published model catalogue has it (`anthropic/claude-sonnet-4-5` or its bare id), if it has one. */
export type CataloguePrices = (model: string) => Price | undefined;

export class PriceTable {
  private readonly prefixes: [string, Price][];
  /** `<home>/prices.json`'s rows: what the administrator wrote wins over the catalogue */
  private readonly own: [string, Price][];
  private catalogue: CataloguePrices | undefined;

  constructor(extra: Record<string, Price> = {}) {
    // Longest prefix first, so `gpt-5-mini` wins over `gpt-5`.
    this.prefixes = Object.entries({ ...BUILT_IN, ...extra }).sort((a, b) => b[0].length - a[0].length);
    this.own = Object.entries(extra).sort((a, b) => b[0].length - a[0].length);
  }

  /**
   * From now on a model the published catalogue prices (the host's model-runtime generations) costs what it says,
   * unless `prices.json` has a row for it; the built-in rows are for the models it does not list. Asked at every
   * cost, so a new generation's prices apply from the next call on.
   */
  useCatalogue(prices: CataloguePrices): this {
    this.catalogue = prices;
    return this;
  }

  /** The built-in table plus `file` when it exists; a file that is not valid fails with the reason. */
  static load(file: string): PriceTable {
    if (!fs.existsSync(file)) return new PriceTable();
    let raw: unknown;
    try {
      raw = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (err) {
      throw new PincerError('config', `${file} is not valid JSON: ${(err as Error).message}`);
    }
    const parsed = PriceFile.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new PincerError(
        'config',
        `${file}: ${issue?.path.join('.') || 'file'}: ${issue?.message} (expected {"model-prefix": {"input": USD per million, "output": …}})`,
      );
    }
    return new PriceTable(parsed.data);
  }

  /** What `usage` cost by the table, or undefined when no row matches its model. */
  cost(usage: ModelUsage): number | undefined {
    const model = usage.model.replace(/^[^/]*\//, '').toLowerCase();
    const price =
      this.own.find(([prefix]) => model.startsWith(prefix))?.[1] ??
      this.catalogue?.(usage.model) ??
      this.prefixes.find(([prefix]) => model.startsWith(prefix))?.[1];
    if (!price) return undefined;
    return (
      (usage.inputTokens * price.input +
        usage.outputTokens * price.output +
        usage.cacheReadTokens * (price.cacheRead ?? price.input) +
        usage.cacheWriteTokens * (price.cacheWrite ?? price.input)) /
      1_000_000
    );
  }
}
