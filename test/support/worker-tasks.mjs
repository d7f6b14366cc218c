// Task handlers for the worker-pool tests. Plain JavaScript, so worker threads load it as it is.
import process from 'node:process';

export function echo(input) {
  return input;
}

export function fail(message) {
  throw new Error(message);
}

/** In a worker, process.exit ends the thread: the task's worker dies under it. */
export function exit(code) {
  process.exit(code);
}

/**
 * Hold the worker busy until the test opens this slot's gate (see worker-gates.ts): mark "started", then block in
 * Atomics.wait. Deterministic, no timers.
 */
export function hold({ gate, slot }) {
  const view = new Int32Array(gate);
  Atomics.store(view, slot * 2, 1);
  Atomics.notify(view, slot * 2);
  Atomics.wait(view, slot * 2 + 1, 0);
  return slot;
}
