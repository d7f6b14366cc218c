/** Starting runners: a child process, a Docker container, or a bubblewrap sandbox. */
export type * from './types.js';
export { ContainerError, isContainerError, type ContainerErrorCode } from './errors.js';
export { createLauncher, loadLauncherConfig, DEFAULT_IMAGE } from './config.js';
export { ProcessLauncher } from './process.js';
export { DockerLauncher, listRunnerContainers, removeRunnerContainers } from './docker.js';
export { BwrapLauncher } from './bwrap.js';
export { ensureRunnerImage, type ImageOptions, type ImageResult } from './image.js';
export { runnerEnvironment, dockerCliEnvironment } from './env.js';
export { containerNameFor, dockerRunArgs } from './docker-args.js';
export { describeLimits } from './limits-report.js';
