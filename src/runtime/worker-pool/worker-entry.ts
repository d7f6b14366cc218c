import { parentPort, workerData, type TransferListItem } from 'node:worker_threads';
import { isTransferredResult } from './transfer.js';
import type { TaskReplyMessage, TaskRequestMessage } from './types.js';

/**
 * The code every pool worker runs: import the pool's task module, then answer `{id, task, input}` requests one at a
 * time with the named export's result. A handler that throws fails only its task; the worker stays usable.
 */
const { tasksUrl } = workerData as { tasksUrl: string };
const handlers = (await import(tasksUrl)) as Record<string, unknown>;
const port = parentPort!;

port.on('message', (request: TaskRequestMessage) => {
  void answer(request).then(({ reply, transfer }) => port.postMessage(reply, transfer));
});

async function answer({ id, task, input }: TaskRequestMessage): Promise<{ reply: TaskReplyMessage; transfer: TransferListItem[] }> {
  try {
    const handler = handlers[task];
    if (typeof handler !== 'function') throw new Error(`no task "${task}" in ${tasksUrl}`);
    const result = await (handler as (input: unknown) => unknown)(input);
    if (isTransferredResult(result)) return { reply: { id, ok: true, value: result.value }, transfer: result.transfer };
    return { reply: { id, ok: true, value: result }, transfer: [] };
  } catch (err) {
    return { reply: { id, ok: false, message: err instanceof Error ? err.message : String(err) }, transfer: [] };
  }
}
