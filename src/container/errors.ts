import { ReasonedError, type ErrorCode } from '../shared/errors.js';

/**
 * Errors of the container launchers. `reason`:
 * - `config`: bad launcher configuration (PINCER_RUNNER, limits); the message names the variable.
 * - `workspace`: the session folder (or the agent/global folder) does not exist or is not a directory.
 * - `docker-unavailable`: the docker CLI is missing or the daemon does not answer (message says which DOCKER_HOST).
 * - `docker-failed`: a docker command failed; the message carries its stderr.
 * - `image`: the base image could not be built (a library of Node not found, `docker import` failed).
 * - `bwrap-unavailable`: bubblewrap is not installed.
 * - `limits`: a runner's cgroup could not be made or its limits written.
 */
export type ContainerErrorCode = 'config' | 'workspace' | 'docker-unavailable' | 'docker-failed' | 'image' | 'bwrap-unavailable' | 'limits';

/** Kept as a subclass: callers (the launcher's auto choice, doctor) branch on the launcher's own `reason`. */
export class ContainerError extends ReasonedError<ContainerErrorCode> {
  constructor(reason: ContainerErrorCode, message: string) {
    super(reason, REASON_CODE[reason], message);
    this.name = 'ContainerError';
  }
}

const REASON_CODE: Record<ContainerErrorCode, ErrorCode> = {
  config: 'config',
  workspace: 'config',
  'docker-unavailable': 'unavailable',
  'docker-failed': 'unavailable',
  image: 'unavailable',
  'bwrap-unavailable': 'unavailable',
  limits: 'unavailable',
};

export function isContainerError(err: unknown, reason?: ContainerErrorCode): err is ContainerError {
  return err instanceof ContainerError && (reason === undefined || err.reason === reason);
}
