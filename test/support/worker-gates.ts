/**
 * Gates that hold pool workers busy deterministically: the `hold` task of worker-tasks.mjs marks its slot started
 * and blocks until the test opens it. Shared memory, so no message has to reach the blocked worker.
 */
export const WORKER_TASKS = new URL('./worker-tasks.mjs', import.meta.url);

export type TestTasks = {
  echo: { input: unknown; output: unknown };
  fail: { input: string; output: never };
  exit: { input: number; output: never };
  hold: { input: { gate: SharedArrayBuffer; slot: number }; output: number };
  /** declared here but not exported by worker-tasks.mjs, to test a missing handler */
  missing: { input: unknown; output: never };
};

export class Gates {
  private readonly buffer: SharedArrayBuffer;
  private readonly view: Int32Array;

  constructor(readonly size = 8) {
    this.buffer = new SharedArrayBuffer(size * 2 * Int32Array.BYTES_PER_ELEMENT);
    this.view = new Int32Array(this.buffer);
  }

  input(slot: number): { gate: SharedArrayBuffer; slot: number } {
    return { gate: this.buffer, slot };
  }

  started(slot: number): boolean {
    return Atomics.load(this.view, slot * 2) === 1;
  }

  open(slot: number): void {
    Atomics.store(this.view, slot * 2 + 1, 1);
    Atomics.notify(this.view, slot * 2 + 1);
  }

  openAll(): void {
    for (let slot = 0; slot < this.size; slot++) this.open(slot);
  }
}
