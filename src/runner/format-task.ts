import { formatBatch, type FormatOptions, type FormattableMessage } from './format.js';

/** Worker task: the runner's `formatBatch`, for batches large enough to be worth moving off the poll loop. */
export type FormatTasks = {
  formatBatch: { input: { messages: FormattableMessage[]; options: FormatOptions }; output: string };
};

function formatBatchTask({ messages, options }: FormatTasks['formatBatch']['input']): string {
  return formatBatch(messages, options);
}

export { formatBatchTask as formatBatch };
