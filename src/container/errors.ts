/**
 * Errors of the container launchers. `code`:
 * - `config`: bad launcher configuration (PINCER_RUNNER, limits); the message names the variable.
 * - `workspace`: the session folder (or the agent/global folder) does not exist or is not a directory.
 * - `docker-unavailable`: the docker CLI is missing or the daemon does not answer (message says which DOCKER_HOST).
 * - `docker-failed`: a docker command failed; the message carries its stderr.
 * - `image`: the base image could not be built (a library of Node not found, `docker import` failed).
 * - `bwrap-unavailable`: bubblewrap is not installed.
 */
export type ContainerErrorCode = 'config' | 'workspace' | 'docker-unavailable' | 'docker-failed' | 'image' | 'bwrap-unavailable';

export class ContainerError extends Error {
  constructor(
    readonly code: ContainerErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ContainerError';
  }
}

export function isContainerError(err: unknown, code?: ContainerErrorCode): err is ContainerError {
  return err instanceof ContainerError && (code === undefined || err.code === code);
}
