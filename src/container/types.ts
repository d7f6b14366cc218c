import type { LimitEvents } from './cgroup.js';
import type { RunnerLimits } from './limits.js';
import type { ChildProcess } from 'node:child_process';

/**
 * How a session's runner is started: a plain child process (the default), a Docker container, or a
 * bubblewrap sandbox. Every launcher gives the host the same handle, so the host can choose by configuration alone.
 */
export type RunnerKind = 'process' | 'docker' | 'bwrap';

/** What the host tells a launcher about one runner. */
export interface LaunchOptions {
  /** the session folder on the host; a sandbox mounts it at /workspace. Must exist (a container never creates it). */
  workspace: string;
  /**
   * the agent group's folder (CLAUDE.md, skills, extensions): bound read-only at /workspace/group, so no session writes
   * what another session of the group reads (docs/security.md, "The group folder"). The session's own writable folder
   * is its `agent/`, never mounted over. Absent: nothing at /workspace/group (a process runner sees the session
   * folder's `group` link).
   */
  groupDir?: string;
  /** the shared global folder: mounted read-only at /workspace/global. Absent: the session folder's own `global/`. */
  globalDir?: string;
  /**
   * the environment the host would give a process runner. A sandboxed runner gets only what it needs from it
   * (`runnerEnvironment`): its own settings and the selected provider's credentials, never the host's other secrets.
   */
  env: NodeJS.ProcessEnv;
  /** append the runner's stderr here; without it the runner's stderr is inherited (or piped, see `stderr`). */
  logFile?: string;
  /** `pipe`: expose the runner's stderr as `child.stderr` (tests); ignored when `logFile` is set. */
  stderr?: 'inherit' | 'pipe';
  /**
   * the host's credential proxy socket (src/host/credential-proxy.ts). A sandbox with its own network cannot reach the
   * proxy's loopback port, so its folder is bound read-only at `/run/pincer-proxy` and the runner forwards to it
   * (`PINCER_CREDENTIAL_PROXY_SOCKET`). A process runner reaches the port directly and ignores it.
   */
  credentialProxySocket?: string;
  /**
   * the host's OTLP relay (src/host/trace-relay.ts), when tracing is on: a sandbox exports its spans to
   * `http://127.0.0.1:<port>/v1/traces`, which the runner forwards to the socket, bound read-only at `/run/pincer-otlp`.
   * A process runner inherits the host's own OTEL_* settings and ignores it.
   */
  traceRelay?: { socket: string; port: number };
  /**
   * a host-owned lock file, outside anything a runner can see: the launcher holds an exclusive lock on it for the life
   * of the runner's processes, and a start waits until the previous holder has ended (`lockedCommand`), so a session
   * never has two runners even when a host died and its runner is still finishing.
   */
  lockFile?: string;
  /**
   * values of the host's secrets the session's MCP servers refer to: handed to the runner as the first line of its
   * stdin (never its environment, its command line or its folder), see src/shared/stdin-document.ts.
   */
  secrets?: Record<string, string>;
  /**
   * a short name for the runner (e.g. the session id); the container is named `pincer-runner-<name>` so a host can
   * find one left behind by a host that died. Absent: a random name.
   */
  name?: string;
}

/** A started runner. Like a `ChildProcess` for the host, with a `stop()` that really ends a container too. */
export interface LaunchedRunner {
  readonly kind: RunnerKind;
  /**
   * the local process: the runner itself (`process`), the `docker run` client attached to the container (`docker`),
   * or `bwrap` (`bwrap`). Its `exit` event is the runner's end; its exit code is the runner's (137 after SIGKILL).
   */
  readonly child: ChildProcess;
  /** the container's name (`docker` only). */
  readonly containerName: string | undefined;
  /**
   * resolves with the exit code (or signal name) once the runner has ended and, for Docker, its container is gone.
   * Never rejects.
   */
  readonly exited: Promise<number | string>;
  /**
   * SIGTERM to the runner, SIGKILL after `graceMs` (default 5000); resolves like `exited`. A runner exits 0 on
   * SIGTERM once its current batch is written, so nothing is lost. Safe to call more than once or after the end.
   */
  stop(graceMs?: number): Promise<number | string>;
  /** end it now (SIGKILL; a container is removed); resolves like `exited`. Rows in flight stay `processing`. */
  kill(): Promise<number | string>;
  /** once `exited` resolved: what its limits stopped (a bwrap runner's cgroup counters), if they are known. */
  limitsHit?(): LimitEvents | undefined;
}

/** Starts runners of one kind. `launch` throws `ContainerError` at once for bad options; later failures end `exited`. */
export interface RunnerLauncher {
  readonly kind: RunnerKind;
  launch(options: LaunchOptions): LaunchedRunner;
  /**
   * Resolves when runners can be started now (docker: the daemon answers and the image exists; bwrap: installed);
   * rejects with a `ContainerError` that says what to do. A host calls it once at start to fail fast.
   */
  check(): Promise<void>;
  /** let go of what the launcher keeps between launches (a process launcher's spare runners); the host calls it last. */
  close?(): Promise<void>;
}

/** Resource limits and isolation settings of a sandboxed runner (from the environment, `loadLauncherConfig`). */
export interface SandboxLimits {
  /** `docker run --memory`, e.g. `2g`. */
  memory: string;
  /** `docker run --cpus`, e.g. `1`. */
  cpus: string;
  /** `docker run --pids-limit`. */
  pids: number;
  /** `docker run --ulimit fsize=`: the largest file a runner may write, in bytes (absent: no limit). */
  fileSizeBytes?: number;
  /** `docker run --network`: `none` by default; a real provider needs a network that reaches its API. */
  network: string;
}

export interface DockerSettings extends SandboxLimits {
  /** the runner image: the host's own Node and its libraries (`pincer container image` builds it). */
  image: string;
  /** the built Pincer app (package.json, dist/, node_modules/) on the host; mounted read-only at /app. */
  appRoot: string;
  /** the environment of the `docker` CLI itself (DOCKER_HOST, PATH, HOME); never passed into the container. */
  cliEnv: NodeJS.ProcessEnv;
  /** `uid:gid` for `--user`; absent: the owner of the session folder. */
  user?: string;
  /** extra variable names to pass into the container besides the runner's own (PINCER_CONTAINER_ENV). */
  extraEnv: string[];
}

export interface BwrapSettings {
  /** the built Pincer app on the host; bound read-only at /app. */
  appRoot: string;
  /** the Node binary run inside (the host's own). */
  node: string;
  /** `--unshare-net` (only loopback inside) unless false. */
  isolateNetwork: boolean;
  extraEnv: string[];
  /** memory, CPU, process and file-size limits (limits.ts; absent: the settings' defaults): a cgroup where the host can make one, rlimits otherwise. */
  limits?: RunnerLimits;
}

/** The launcher configuration a host reads from its environment. */
export interface LauncherConfig {
  kind: RunnerKind;
  /** PINCER_UNSANDBOXED_SCRIPTS=1: a plain process runner runs task scripts too (refused there otherwise). */
  unsandboxedScripts?: boolean;
  docker: DockerSettings;
  bwrap: BwrapSettings;
}
