export { CpuAdmission, defaultParallelism, sharedCpuAdmission } from './admission.js';
export { WORKER_TASK_CHANNEL, subscribeTaskEvents } from './diagnostics.js';
export { WorkerTaskError, isWorkerTaskError, type WorkerTaskErrorCode } from './errors.js';
export { WorkerTaskPool, liveWorkerCount } from './pool.js';
export type * from './types.js';
