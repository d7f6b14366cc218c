import { parentPort, workerData } from 'node:worker_threads';
import type { TaskReplyMessage, TaskRequestMessage } from './types.js';

/**
 * The code every pool worker runs: import the pool's task module, then answer `{id, task, input}` requests one at a
 * time with the named export's result. A handler that throws fails only its task; the worker stays usable.
 */
const { tasksUrl } = workerData as { tasksUrl: string };
const handlers = (await import(tasksUrl)) as Record<string, unknown>;
const port = parentPort!;

port.on('message', (request: TaskRequestMessage) => {
  void answer(request).then((reply) => port.postMessage(reply));
});

async function answer({ id, task, input }: TaskRequestMessage): Promise<TaskReplyMessage> {
  try {
    const handler = handlers[task];
    if (typeof handler !== 'function') throw new Error(`no task "${task}" in ${tasksUrl}`);
    return { id, ok: true, value: await (handler as (input: unknown) => unknown)(input) };
  } catch (err) {
    return { id, ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}
