/**
 * Summaries of latency samples. Percentiles use the nearest-rank method (the value at rank ⌈p/100 · n⌉ of the sorted
 * samples), so every reported number is one that was actually measured.
 */
export interface Summary {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** The value at percentile `p` (0 < p ≤ 100) of `sorted` (ascending). NaN for no samples. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const count = sorted.length;
  return {
    count,
    min: count > 0 ? sorted[0]! : Number.NaN,
    mean: count > 0 ? sorted.reduce((sum, x) => sum + x, 0) / count : Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: count > 0 ? sorted[count - 1]! : Number.NaN,
  };
}
