import diagnosticsChannel from 'node:diagnostics_channel';
import type { WorkerTaskEvent } from './types.js';

/** `node:diagnostics_channel` name the pool publishes one `WorkerTaskEvent` to per settled task. */
export const WORKER_TASK_CHANNEL = 'pincer.worker.task';

const channel = diagnosticsChannel.channel(WORKER_TASK_CHANNEL);

/** Publish only when someone listens: building the event is the only cost, and it is skipped otherwise. */
export function publishTaskEvent(build: () => WorkerTaskEvent): void {
  if (channel.hasSubscribers) channel.publish(build());
}

/** Subscribe to task events; returns the unsubscribe function. */
export function subscribeTaskEvents(listener: (event: WorkerTaskEvent) => void): () => void {
  const handler = (message: unknown): void => listener(message as WorkerTaskEvent);
  diagnosticsChannel.subscribe(WORKER_TASK_CHANNEL, handler);
  return () => {
    diagnosticsChannel.unsubscribe(WORKER_TASK_CHANNEL, handler);
  };
}
