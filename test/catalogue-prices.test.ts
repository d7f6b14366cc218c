import { describe, expect, it } from 'vitest';
import { PriceTable, type Price } from '../src/host/usage/prices.js';
import type { ModelUsage } from '../src/shared/usage.js';

const usage = (model: string): ModelUsage => ({ model, inputTokens: 1_000_000, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });

describe('prices from the published model catalogue', () => {
  it('a catalogue price wins over the built-in row, prices.json over both, and a new publication applies at the next cost', () => {
    let published: Record<string, Price> = { 'anthropic/claude-sonnet-4-5': { input: 4, output: 20, cacheRead: 0.4, cacheWrite: 5 } };
    const table = new PriceTable({ 'gpt-5': { input: 9, output: 9 } }).useCatalogue((model) => published[model]);
    expect(table.cost(usage('anthropic/claude-sonnet-4-5'))).toBe(4); // not the built-in 3 of claude-sonnet-4
    expect(table.cost(usage('openai/gpt-5'))).toBe(9); // the administrator's row, whatever the catalogue says
    expect(table.cost(usage('claude-3-5-haiku-latest'))).toBeCloseTo(0.8); // not in the catalogue: the built-in row
    published = { 'anthropic/claude-sonnet-4-5': { input: 6, output: 30, cacheRead: 0.6, cacheWrite: 7.5 } }; // the next generation
    expect(table.cost(usage('anthropic/claude-sonnet-4-5'))).toBe(6);
    expect(new PriceTable().cost(usage('unknown-model'))).toBeUndefined();
  });
});
