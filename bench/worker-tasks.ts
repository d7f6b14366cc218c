/** Worker tasks for the pool benchmark (bench/worker-pool.ts). */
export function empty(): null {
  return null;
}
