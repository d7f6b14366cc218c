import type { SessionMode, TriggerRules } from './central-db/types.js';
import type { KubernetesSettings } from './kubernetes/settings.js';
import type { TaskHistoryPolicy } from '../db/task-history.js';

/** The host's configuration, resolved from flags and environment by `loadHostConfig`. */
export interface HostConfig {
  /** PINCER_HOME: holds `pincer.db`, `groups/<folder>/`, `global/`, `sessions/<id>/`. */
  home: string;
  /**
   * `--provider P` of this run: the agent group `group` (by name) runs on P while this host runs, its saved provider
   * untouched; with `save` (`--save`) P is saved as its provider. Applied at start, before any runner starts.
   */
  runProvider?: { group: string; provider: string; save: boolean };
  /** the group created on first start and used for conversations with no binding; null: such conversations are refused. */
  defaultGroup: {
    name: string;
    /** the provider the group is created with (AGENT_PROVIDER, else `auto`; `--provider P --save`: P). */
    provider: string;
    model: string | null;
    sessionMode: SessionMode;
    timezone: string;
    /** PINCER_ADMIN_USER_ID (comma-separated), added to the group's admins at each start. */
    admins: string[];
    /** PINCER_GROUP_TRIGGER and PINCER_ALLOWED_USERS, the group's platform rules, set at each start. */
    triggerRules: TriggerRules;
  } | null;
  /** the HTTP channel, when enabled (`--http PORT`). A missing token is generated and saved under the home. */
  /** `metricsToken` guards `GET /metrics`; without it only loopback callers may scrape. */
  http: { port: number; host: string; hostnames?: string[]; token: string | undefined; metricsToken: string | undefined; sseMaxBufferedBytes: number } | null;
  /** the credential proxy's connection caps (PINCER_PROXY_RUNNER_CONNECTIONS, PINCER_PROXY_MAX_CONNECTIONS); unset: defaults. */
  proxy?: { perRunner: number; global: number | undefined };
  /**
   * How the host reaches its sessions (src/host/session/port.ts): `local` (the folder on this machine, its engine in
   * the host) or `session-serve` (PINCER_RUNNER=session-serve: one `pincer session-serve` process per session, over
   * loopback HTTP) or `kubernetes` (PINCER_RUNNER=kubernetes: a pod per active session, src/host/kubernetes/).
   * `orphanMs`: a served session stops by itself after this long without a word from its host.
   */
  sessionPort: { kind: 'local' | 'session-serve'; orphanMs: number } | { kind: 'kubernetes'; orphanMs: number; kubernetes: KubernetesSettings };
  runners: {
    /**
     * `auto` (default): bwrap, else docker, else process, resolved when the host starts (src/host/runner-kind.ts);
     * `process`: a child process; `docker`: a Docker container, `bwrap`: a bubblewrap sandbox, both through
     * src/container, configured from `env` (PINCER_RUNNER, PINCER_CONTAINER_*, PINCER_BWRAP_NETWORK, DOCKER_HOST).
     */
    kind: 'auto' | 'process' | 'docker' | 'bwrap';
    /** an idle runner with nothing due is stopped after this long. */
    idleTimeoutMs: number;
    /** a runner whose heartbeat is older than this is killed and its rows recovered. */
    heartbeatTimeoutMs: number;
    /** a runner that has not written its `runner_state` this long after its start is killed. */
    startTimeoutMs: number;
    stopGraceMs: number;
    /** a query busy with one batch longer than this is ended (its runner killed, the chat told; the batch retried). */
    turnLimitMs: number;
    /** after an unexpected exit the next start waits base × 2^(crashes−1), at most max. */
    backoffBaseMs: number;
    backoffMaxMs: number;
    /** runners alive at once, host-wide (PINCER_MAX_RUNNERS); unset: from the machine's memory (src/host/runner-admission.ts). */
    maxRunners?: number;
    /**
     * runner processes kept started without a session (PINCER_SPARE_RUNNERS; process runners only): a session that needs
     * a runner is given one, which skips the process's start. Absent or 0: none.
     */
    spares?: number;
    /** the environment runners inherit (host secrets removed). */
    env: NodeJS.ProcessEnv;
  };
  sweep: {
    /** fallback period of each session's loop while its runner lives; changes to the session DB wake it at once. */
    intervalMs: number;
    /** the same with no runner and nothing due (a missed file event is all it covers then). */
    idleIntervalMs: number;
    /** a `processing` row outside the runner's batch is stale once unchanged this long. */
    staleMs: number;
    /** back-off before retry n is base × 2^(n−1), at most max. */
    retryBaseMs: number;
    retryMaxMs: number;
    /** after this many tries a message is `failed` and the chat is told. */
    maxTries: number;
    /** which finished task rows are kept (src/host/task-history.ts). */
    taskHistory: TaskHistoryPolicy;
  };
  delivery: {
    maxAttempts: number;
    retryBaseMs: number;
    /** PINCER_AGENT_ROUTES: which agent groups (by name) may start a conversation with which (src/host/outbound-reach.ts). */
    agentRoutes?: AgentRoute[];
  };
}

/** One allowed `send_to_agent` direction: agent group `from` may message agent group `to` (names). */
export interface AgentRoute {
  from: string;
  to: string;
}

/** A conversation on a channel: where an inbound message came from and where answers go. */
export interface ConversationRef {
  channelType: string;
  platformId: string;
  threadId: string | null;
}
