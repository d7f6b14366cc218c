import { z } from 'zod';

/**
 * Every environment variable Pincer itself reads, listed once: its name, who reads it, its parser (which holds its one
 * default), whether it is a secret, and one line of meaning. docs/configuration.md has the long form and, in its "Every
 * setting" table, a copy generated from this list (`node scripts/settings-doc.mjs`; test/settings.test.ts checks that it
 * is current and that the hand-written tables agree with it). The loaders (src/shared/settings-load.ts and the host,
 * runner and launcher configuration built on it) are the only code that reads these variables; test/settings.test.ts
 * fails on a read anywhere else.
 *
 * The runner's environment is derived from this list as an ALLOW-list: a runner gets the variables a runner reads and
 * the few system ones below, never "the host's environment less what we thought of" — a host variable nobody listed
 * (`OPENAI_ADMIN_KEY`, `ANTHROPIC_CUSTOM_HEADERS`, a cloud key) never reaches an agent. docs/security.md "What a
 * runner's environment holds".
 */

/**
 * Who reads a variable: `host` (the host process only; never passed on), `launcher` (the host, where it starts a
 * runner: kept in the runners' configuration, never in a runner's own environment), `runner` (the runner, its
 * provider SDK or CLI), `both`.
 */
export type SettingReader = 'host' | 'launcher' | 'runner' | 'both';

/** How a setting reaches a runner: `user` (the administrator sets it), `launcher`/`host` (Pincer sets it itself). */
export type SettingSource = 'user' | 'launcher' | 'host';

interface Definition<R extends SettingReader = SettingReader, P extends z.ZodType = z.ZodType> {
  reader: R;
  /**
   * makes the parser of the raw value (a string, or undefined when unset), which holds the default: what an unset
   * variable means. Made on first use: every process loads this list, and building all parsers up front costs a runner
   * tens of milliseconds at start.
   */
  parser: () => P;
  description: string;
  /** the default in words, where the parser has none ('' when unset means off or "the SDK's own"). */
  defaultWords?: string;
  secret?: boolean;
  /** who sets it for a runner: the administrator (default) or Pincer itself (never copied from the host's environment). */
  source?: SettingSource;
}

export interface Setting {
  name: string;
  reader: SettingReader;
  /**
   * A credential or token. A host secret never leaves the host; a runner's secret (a provider key) is only ever given
   * to a runner as the credential proxy's placeholder (src/host/credential-proxy.ts).
   */
  secret: boolean;
  /** the default as docs/configuration.md writes it: the parser's default, else the words given ('' when none). */
  default: string;
  description: string;
  source: SettingSource;
  parse: z.ZodType;
}

type Extra = Pick<Definition, 'defaultWords' | 'secret' | 'source'>;
const def =
  <R extends SettingReader>(reader: R) =>
  <P extends z.ZodType>(parser: () => P, description: string, extra: Extra = {}): Definition<R, P> => ({ reader, parser, description, ...extra });
const host = def('host');
const launcher = def('launcher');
const runner = def('runner');
const both = def('both');

// Parsers. An unset variable takes the default; an explicit bad value fails with the variable named.
const text = () => z.string().optional();
const nonEmpty = () => z.string().min(1).optional();
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const optionalPositiveInt = () => z.coerce.number().int().positive().optional();
const token = () => z.string().min(16, 'must be at least 16 characters').optional();
const names = () =>
  z
    .string()
    .default('')
    .transform((list) =>
      list
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    );
/** A Kubernetes quantity: `500m`, `1`, `256Mi`, `1Gi`. */
const quantity = () => z.string().regex(/^\d+(\.\d+)?(m|k|Ki|M|Mi|G|Gi|T|Ti)?$/, 'a Kubernetes quantity like 500m, 256Mi or 1Gi');
const dnsName = () =>
  z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a lowercase DNS name')
    .max(63);
/** `host:port` to listen on (port 0: any free one). */
const listenAddress = () =>
  z
    .string()
    .regex(/^[A-Za-z0-9.-]+:\d{1,5}$/, 'host:port, e.g. 0.0.0.0:8788')
    .transform((value) => ({ host: value.slice(0, value.lastIndexOf(':')), port: Number(value.slice(value.lastIndexOf(':') + 1)) }))
    .refine((a) => a.port <= 65535, 'a port up to 65535');
/** `key=value,key=value` (node selectors). */
const pairs = () =>
  z
    .string()
    .regex(/^([A-Za-z0-9./_-]+=[A-Za-z0-9._-]*)(,[A-Za-z0-9./_-]+=[A-Za-z0-9._-]*)*$/, 'key=value pairs separated by commas')
    .transform((value) => Object.fromEntries(value.split(',').map((pair) => pair.split('=', 2) as [string, string])));

/** A docker image reference as Pincer accepts it: lower case, `name[:tag]`, optional path. */
export const IMAGE_NAME = /^[a-z0-9][a-z0-9_.\-/:]*$/;
export const RUNNER_KINDS = ['auto', 'process', 'docker', 'bwrap', 'session-serve', 'kubernetes'] as const;
const LAUNCHED = { source: 'launcher' } as const;
const BY_HOST = { source: 'host' } as const;

const REGISTRY = {
  // the host
  PINCER_HOME: host(() => nonEmpty(), 'the home: all data of this installation', { defaultWords: '~/.pincer' }),
  PINCER_DEFAULT_GROUP: host(() => z.string().min(1).default('main'), 'group for unbound conversations; `none`: refuse them'),
  PINCER_SESSION_MODE: host(() => z.enum(['shared', 'per-thread']).default('shared'), 'the default group gives each thread its own session (`per-thread`)'),
  PINCER_ADMIN_USER_ID: host(() => text(), 'admins of every group (the host checks admin rights itself)'),
  NANOCLAW_ADMIN_USER_ID: host(() => text(), 'the admin user of a runner started by hand'),
  PINCER_CHAT_UI: host(() => z.enum(['tui', 'plain']).default('tui'), '`pincer chat` in a terminal: the terminal UI, or the line REPL (`plain`)'),
  PINCER_GROUP_TRIGGER: host(() => z.enum(['mention', 'always']).default('mention'), 'when the default group answers in a platform group chat'),
  PINCER_ALLOWED_USERS: host(() => text(), 'platform users the default group answers'),
  PINCER_HTTP_HOST: host(() => z.string().min(1).default('127.0.0.1'), 'the HTTP API address'),
  PINCER_HTTP_HOSTNAMES: host(() => text(), 'extra host names the HTTP API answers to (Host header) besides loopback and PINCER_HTTP_HOST'),
  PINCER_HTTP_TOKEN: host(() => token(), 'the HTTP API admin bearer token', { defaultWords: '<home>/http-token', secret: true }),
  PINCER_METRICS_TOKEN: host(() => token(), 'bearer token for /metrics', { secret: true }),
  PINCER_PROXY_RUNNER_CONNECTIONS: host(() => positiveInt(64), 'connections one runner may hold to the credential proxy'),
  PINCER_PROXY_MAX_CONNECTIONS: host(() => optionalPositiveInt(), 'connections the credential proxy may hold in all', {
    defaultWords: "a quarter of the host's open-file limit, at most 4096",
  }),
  PINCER_SSE_MAX_BUFFERED_BYTES: host(() => positiveInt(1024 * 1024), 'unread bytes an SSE client may have'),
  PINCER_SESSION_SERVE_RUNNER: host(() => z.enum(['auto', 'process', 'docker', 'bwrap']).default('auto'), 'the runner kind of each session-serve process'),
  PINCER_SESSION_ORPHAN_MS: host(() => positiveInt(3 * 60_000), 'a session-serve process without its host drains and exits after this'),
  PINCER_SESSION_REFUSE_FS: host(() => names(), 'more file system types session-serve refuses'),
  PINCER_IDLE_TIMEOUT_MS: host(() => positiveInt(5 * 60_000), 'stop a runner idle this long'),
  PINCER_HEARTBEAT_TIMEOUT_MS: host(() => positiveInt(30_000), 'kill a runner whose heartbeat is older'),
  PINCER_RUNNER_START_TIMEOUT_MS: host(() => positiveInt(60_000), 'kill a runner that has not started after this'),
  PINCER_TURN_LIMIT_MS: host(() => positiveInt(30 * 60_000), 'end a query busy with one batch longer than this'),
  PINCER_RUNNER_BACKOFF_MS: host(() => positiveInt(1000), 'back-off base after an unexpected runner exit'),
  PINCER_RUNNER_BACKOFF_MAX_MS: host(() => positiveInt(60_000), 'back-off cap after unexpected runner exits'),
  PINCER_SPARE_RUNNERS: host(
    () => z.coerce.number().int().min(0).max(4).default(0),
    'runner processes a process-mode host keeps started without a session, each taking the next session that needs one',
  ),
  PINCER_MAX_RUNNERS: host(() => optionalPositiveInt(), 'runners alive at once on this host; more sessions wait in line', {
    defaultWords: "half the memory ÷ the provider's footprint",
  }),
  PINCER_SWEEP_INTERVAL_MS: host(() => positiveInt(1000), 'fallback period of the sweep of a session whose runner lives'),
  PINCER_SWEEP_IDLE_MS: host(() => positiveInt(60_000), 'fallback period of the sweep of a session with no runner and nothing due'),
  PINCER_STALE_MS: host(() => positiveInt(2000), 'retry a processing row outside the live batch and not held by the runner after this'),
  PINCER_RETRY_BASE_MS: host(() => positiveInt(2000), 'retry back-off base'),
  PINCER_RETRY_MAX_MS: host(() => positiveInt(5 * 60_000), 'retry back-off cap'),
  PINCER_MAX_TRIES: host(() => positiveInt(5), 'tries before a message fails'),
  PINCER_TASK_KEEP_RUNS: host(() => positiveInt(20), 'finished runs kept per task'),
  PINCER_TASK_KEEP_DAYS: host(() => z.coerce.number().int().nonnegative().default(7), 'days a finished task is kept'),
  PINCER_DELIVERY_ATTEMPTS: host(() => positiveInt(5), 'delivery attempts per outbound row'),
  PINCER_DELIVERY_RETRY_MS: host(() => positiveInt(500), 'delivery back-off base'),
  PINCER_AGENT_ROUTES: host(
    () =>
      z
        .string()
        .default('')
        .transform((list) =>
          list
            .split(',')
            .map((pair) => pair.trim())
            .filter(Boolean),
        )
        .pipe(z.array(z.string().regex(/^[^>\s]+>[^>\s]+$/, 'pairs of agent group names like main>research, comma-separated')))
        .transform((pairs) => pairs.map((pair) => ({ from: pair.split('>')[0]!, to: pair.split('>')[1]! }))),
    'which agent groups may message which with send_to_agent: `from>to` pairs of group names, comma-separated',
    { defaultWords: 'none' },
  ),
  // sessions on Kubernetes (PINCER_RUNNER=kubernetes): the host's; a pod never sees them
  PINCER_K8S_NAMESPACE: host(() => dnsName().optional(), 'where session objects go', {
    defaultWords: "the host pod's namespace, else the kubeconfig context's",
  }),
  PINCER_K8S_IMAGE: host(() => nonEmpty(), 'the image of the session pods (required)'),
  PINCER_K8S_IMAGE_PULL_POLICY: host(() => z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'), 'the pods’ image pull policy'),
  PINCER_K8S_IMAGE_PULL_SECRETS: host(
    () =>
      z
        .string()
        .regex(/^[a-z0-9.,-]+$/, 'secret names separated by commas')
        .optional(),
    'pull secret names, comma-separated',
  ),
  PINCER_K8S_COMMAND: host(() => z.string().min(1).default('pincer'), 'the executable in the image that is `pincer`'),
  PINCER_K8S_STORAGE_CLASS: host(() => nonEmpty(), 'storage class of session claims', { defaultWords: "the cluster's default" }),
  PINCER_K8S_STORAGE_SIZE: host(() => quantity().default('1Gi'), 'size of each session claim'),
  PINCER_K8S_ACCESS_MODE: host(() => z.enum(['ReadWriteOnce', 'ReadWriteOncePod']).default('ReadWriteOnce'), 'access mode of session claims'),
  PINCER_K8S_SHARED_CLAIM: host(() => dnsName().optional(), 'a ReadWriteMany claim with `groups/` and `global/`'),
  PINCER_K8S_RUNTIME_CLASS: host(() => dnsName().optional(), 'the pods’ runtime class'),
  PINCER_K8S_NODE_SELECTOR: host(() => pairs().optional(), 'the pods’ node selector, `key=value,…`'),
  PINCER_K8S_CPU_REQUEST: host(() => quantity().default('100m'), 'CPU request of a pod'),
  PINCER_K8S_MEMORY_REQUEST: host(() => quantity().default('256Mi'), 'memory request of a pod'),
  PINCER_K8S_CPU_LIMIT: host(() => quantity().optional(), 'CPU limit of a pod'),
  PINCER_K8S_MEMORY_LIMIT: host(() => quantity().default('1Gi'), 'memory limit of a pod'),
  PINCER_K8S_RUN_AS_USER: host(() => z.coerce.number().int().positive().default(1000), 'uid (and gid, fsGroup) of the pods'),
  PINCER_K8S_START_TIMEOUT_MS: host(() => positiveInt(120_000), 'from creating a pod to its endpoint answering'),
  PINCER_K8S_ENDPOINT_PORT: host(() => z.coerce.number().int().min(1).max(65535).default(7070), 'the port session-serve listens on in a pod'),
  PINCER_K8S_IDLE_MS: host(() => positiveInt(5 * 60_000), 'a pod with nothing to do this long is drained and deleted'),
  PINCER_K8S_HEARTBEAT_MS: host(() => positiveInt(5000), 'how often the host asks a pod’s health'),
  PINCER_K8S_PROXY_URL: host(() => z.url().optional(), 'the host’s credential proxy as pods reach it'),
  PINCER_K8S_PROXY_LISTEN: host(() => listenAddress().optional(), 'where the credential proxy also listens for pods, `host:port`'),
  KUBECONFIG: host(() => nonEmpty(), 'the cluster (its first file); without it, the in-cluster service account'),
  KUBERNETES_SERVICE_HOST: host(() => nonEmpty(), 'set in a pod: the host runs in the cluster'),
  // where runners are started
  PINCER_RUNNER: launcher(() => z.enum(RUNNER_KINDS).default('auto'), 'the runner kind: auto, process, docker, bwrap, session-serve, kubernetes'),
  PINCER_CONTAINER_IMAGE: launcher(() => z.string().regex(IMAGE_NAME, 'a docker image name').default('pincer-node'), 'the Docker runner image'),
  PINCER_CONTAINER_MEMORY: launcher(
    () =>
      z
        .string()
        .regex(/^\d+[bkmg]?$/i, 'like 512m or 2g')
        .default('2g'),
    'memory limit of a sandboxed runner',
  ),
  PINCER_CONTAINER_CPUS: launcher(
    () =>
      z
        .string()
        .regex(/^\d+(\.\d+)?$/, 'a number like 1 or 0.5')
        .default('1'),
    'CPU limit of a sandboxed runner',
  ),
  PINCER_CONTAINER_PIDS: launcher(() => z.coerce.number().int().positive().default(512), 'process limit of a sandboxed runner'),
  PINCER_CONTAINER_FILE_SIZE: launcher(
    () =>
      z
        .string()
        .regex(/^\d+[bkmg]?$/i, 'like 512m or 2g')
        .default('1g'),
    'largest file a sandboxed runner may write',
  ),
  PINCER_SESSION_DISK: launcher(
    () =>
      z
        .string()
        .regex(/^\d+[bkmg]?$/i, 'like 512m or 2g')
        .default('4g'),
    'largest total a session folder may hold on disk; past it the host stops its runner',
  ),
  PINCER_SESSION_FILES: launcher(() => positiveInt(250_000), 'most files and folders a session folder may hold; past it the host stops its runner'),
  PINCER_CONTAINER_NETWORK: launcher(() => z.string().min(1).default('none'), 'the Docker network of a runner'),
  PINCER_CONTAINER_USER: launcher(
    () =>
      z
        .string()
        .regex(/^\d+(:\d+)?$/, 'uid or uid:gid')
        .optional(),
    'uid[:gid] of a Docker runner',
    { defaultWords: "the session folder's owner" },
  ),
  PINCER_CONTAINER_ENV: launcher(() => names(), 'extra variable names passed to every runner (e.g. HTTPS_PROXY)'),
  PINCER_UNSANDBOXED_SCRIPTS: launcher(() => z.enum(['', '0', '1']).default(''), '1: task scripts run in a plain process runner too (refused there otherwise)'),
  PINCER_BWRAP_NETWORK: launcher(() => z.enum(['none', 'host']).default('none'), 'none: only loopback in a bubblewrap runner; host: the host network'),
  DOCKER_HOST: launcher(() => text(), 'the daemon the docker CLI talks to', { defaultWords: "docker's default" }),
  DOCKER_CONFIG: launcher(() => text(), 'the docker CLI configuration folder'),
  DOCKER_CONTEXT: launcher(() => text(), 'the docker CLI context'),
  DOCKER_CERT_PATH: launcher(() => text(), 'the docker CLI TLS certificates'),
  DOCKER_TLS_VERIFY: launcher(() => text(), 'the docker CLI TLS verification'),
  // both
  // unset or empty: no policy here (the runner then takes config.json's; `auto` where there is none)
  AGENT_PROVIDER: both(
    () => z.preprocess((v) => (v === '' ? undefined : v), z.string().optional()),
    'the provider (the host sets each group’s for its runners)',
    { defaultWords: 'auto' },
  ),
  PINCER_MODEL: both(() => text(), '<provider>/<model> of the built-in provider'),
  TZ: both(() => text(), 'time zone (the host sets each group’s for its runners)', { defaultWords: 'system zone' }),
  // any case; an unknown level logs at info (a typo must not silence the log)
  PINCER_LOG_LEVEL: both(
    () => z.preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), z.enum(['debug', 'info', 'warn', 'error']).catch('info')),
    'debug, info, warn, error',
  ),
  PINCER_BUSY_TIMEOUT_MS: both(() => positiveInt(10_000), 'wait for another process’s lock on a session DB (at least 5000)'),
  PINCER_STOP_GRACE_MS: both(() => positiveInt(3000), 'grace of a runner being stopped'),
  PINCER_ATTACHMENT_ALLOW_HOSTS: both(() => z.string().default(''), 'where attachment URLs may point besides public addresses'),
  OTEL_EXPORTER_OTLP_ENDPOINT: both(() => text(), 'OTLP/HTTP endpoint of traces'),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: both(() => text(), 'OTLP/HTTP endpoint of traces (traces only)'),
  OTEL_EXPORTER_OTLP_HEADERS: both(() => text(), 'headers of OTLP exports (a process runner exports itself)', { secret: true }),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: both(() => text(), 'headers of OTLP trace exports', { secret: true }),
  OTEL_SDK_DISABLED: both(() => text(), '`true`: no tracing'),
  OTEL_EXPORTER_OTLP_PROTOCOL: runner(() => text(), 'the OTLP protocol of a provider CLI’s telemetry'),
  OTEL_TRACES_EXPORTER: runner(() => text(), 'a provider CLI’s trace exporter; `none`: no tracing'),
  OTEL_METRICS_EXPORTER: runner(() => text(), 'a provider CLI’s metrics exporter'),
  OTEL_LOGS_EXPORTER: runner(() => text(), 'a provider CLI’s logs exporter'),
  // the runner
  PINCER_WORKSPACE: runner(() => text(), 'the session folder (set by the launcher)', { defaultWords: '/workspace', ...LAUNCHED }),
  PINCER_STOP_ON_STDIN_EOF: runner(() => text(), '1: stop when stdin closes (set by the launcher)', LAUNCHED),
  PINCER_CREDENTIAL_PROXY: runner(() => text(), '1: behind the credential proxy (set by the host)', BY_HOST),
  PINCER_CREDENTIAL_PROXY_KEY: runner(() => text(), 'the session’s placeholder for a keyless model server behind the proxy (set by the host)', {
    ...BY_HOST,
    secret: true,
  }),
  PINCER_CREDENTIAL_PROXY_SOCKET: runner(() => text(), 'the proxy socket inside a sandbox (set by the launcher)', LAUNCHED),
  PINCER_MCP_RELAY_URL: runner(() => text(), "the host's relay of the user's HTTP MCP servers", BY_HOST),
  PINCER_MCP_RELAY_TOKEN: runner(() => text(), 'the session placeholder the MCP relay takes', BY_HOST),
  PINCER_UPSTREAM_ANTHROPIC_BASE_URL: runner(() => text(), 'the real upstream behind the proxy (set by the host)', BY_HOST),
  PINCER_UPSTREAM_OPENAI_BASE_URL: runner(() => text(), 'the real upstream behind the proxy (set by the host)', BY_HOST),
  PINCER_SANDBOX_NO_NETWORK: runner(() => text(), 'the setting that gives a sandbox a network (set by the launcher)', LAUNCHED),
  PINCER_AUTO_FALLBACK: runner(() => z.string().min(1).default('claude'), 'what auto picks when no provider is usable'),
  PINCER_WORKER_PARALLELISM: runner(() => optionalPositiveInt(), 'worker threads for CPU tasks', { defaultWords: 'cores − 1 (min 1)' }),
  PINCER_FORMAT_WORKER_BYTES: runner(() => positiveInt(256 * 1024), 'format a batch this large on a worker'),
  PINCER_ATTACHMENT_WORKER_BYTES: runner(() => positiveInt(64 * 1024), 'encode an attachment this large on a worker'),
  PINCER_WAKE: runner(() => z.enum(['watch', 'poll']).default('watch'), 'watch or poll the session DB'),
  PINCER_POLL_IDLE_MS: runner(() => positiveInt(1000), 'poll interval when idle'),
  PINCER_IDLE_CHECK_MS: runner(() => positiveInt(60_000), 'how often an idle runner that watches for changes looks anyway'),
  PINCER_POLL_ACTIVE_MS: runner(() => positiveInt(500), 'poll interval during a query'),
  PINCER_HEARTBEAT_MS: runner(() => positiveInt(5000), 'heartbeat period'),
  PINCER_BATCH_MAX_MESSAGES: runner(() => positiveInt(50), 'messages per batch'),
  PINCER_BATCH_MAX_BYTES: runner(() => positiveInt(512 * 1024), 'bytes per batch'),
  PINCER_SCRIPT_TIMEOUT_MS: runner(() => positiveInt(30_000), 'task pre-script timeout'),
  PINCER_SPARE: runner(() => text(), '1: a spare runner, waiting on stdin for the session it is given (set by the launcher)', LAUNCHED),
  PINCER_SCRIPTS_REFUSED: runner(() => text(), 'why this runner refuses task scripts (set by the launcher of a plain process)', LAUNCHED),
  PINCER_SCRIPT_ENV_ALLOW: runner(() => names(), 'variables task scripts may see besides PATH, HOME, TZ, LANG'),
  PINCER_DOWNLOAD_TIMEOUT_MS: runner(() => positiveInt(15_000), 'attachment download timeout'),
  PINCER_MAX_FILE_BYTES: runner(() => positiveInt(50 * 1024 * 1024), 'largest file the agent may send'),
  PINCER_MCP_CALL_MS: runner(() => positiveInt(300_000), 'timeout of a call to a user MCP server'),
  PINCER_MCP_START_MS: runner(() => positiveInt(10_000), 'start timeout of a user MCP server'),
  PINCER_MCP_RESULT_BYTES: runner(() => positiveInt(10 * 1024 * 1024), 'largest result of a user MCP server'),
  PINCER_MCP_IMAGE_BYTES: runner(() => positiveInt(5 * 1024 * 1024), 'largest image of a user MCP server'),
  PINCER_PROVIDER_TIMEOUT_MS: runner(() => positiveInt(120_000), 'how long the model may stay silent'),
  PINCER_CONTEXT_WINDOW: runner(() => optionalPositiveInt(), 'the model’s context window', { defaultWords: "the catalogue's, else 128000" }),
  PINCER_MODEL_MAX_RETRIES: runner(() => z.coerce.number().int().nonnegative().default(2), 'retries of a model request'),
  PINCER_BASH_TIMEOUT_MS: runner(() => positiveInt(120_000), 'default bash tool timeout'),
  PINCER_TOOL_OUTPUT_CHARS: runner(() => positiveInt(30_000), 'tool output cut'),
  PINCER_CLAUDE_PREWARM: runner(() => text(), '1: keep the next Claude Code process ready'),
  PINCER_CODE_MEMORY_MB: runner(() => positiveInt(64), 'memory of a code-mode program'),
  PINCER_CODE_SLICE_MS: runner(() => positiveInt(5000), 'time slice of a code-mode program'),
  PINCER_CODE_WAIT_MS: runner(() => positiveInt(30_000), 'how long code-mode `wait` waits'),
  PINCER_STDIN_DOCUMENT: runner(() => text(), '1: a launch document (secrets) comes on stdin (set by the launcher)', LAUNCHED),
  PINCER_TRACE_RELAY_SOCKET: runner(() => text(), 'the host’s OTLP relay socket inside a sandbox (set by the launcher)', LAUNCHED),
  PINCER_IMAGE_FINGERPRINT: runner(() => text(), 'the Docker image the runner runs in (set by the launcher)', LAUNCHED),
  // provider SDKs and CLIs (their keys reach a runner only as the proxy's placeholders)
  ANTHROPIC_API_KEY: runner(() => text(), 'Anthropic API key', { secret: true }),
  ANTHROPIC_AUTH_TOKEN: runner(() => text(), 'Anthropic bearer token', { secret: true }),
  CLAUDE_CODE_OAUTH_TOKEN: runner(() => text(), 'Claude subscription token', { secret: true }),
  ANTHROPIC_BASE_URL: runner(() => text(), 'the Messages API endpoint', { defaultWords: 'https://api.anthropic.com' }),
  ANTHROPIC_MODEL: runner(() => text(), 'Claude Code model override'),
  CLAUDE_CONFIG_DIR: runner(() => text(), 'where Claude Code keeps its sessions', { defaultWords: '~/.claude' }),
  CLAUDE_TOOL_ALLOWLIST: runner(() => text(), 'Claude Code tools allowed'),
  CLAUDE_DISALLOWED_TOOLS: runner(() => text(), 'Claude Code tools refused'),
  CLAUDE_CODE_USE_BEDROCK: runner(() => text(), 'Claude Code through Bedrock'),
  CLAUDE_CODE_USE_VERTEX: runner(() => text(), 'Claude Code through Vertex'),
  CLAUDE_CODE_USE_FOUNDRY: runner(() => text(), 'Claude Code through Foundry'),
  CLAUDE_CODE_MAX_RETRIES: runner(() => text(), 'Claude Code request retries'),
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: runner(() => z.string().default('1'), 'Claude Code sends nothing but model calls'),
  CLAUDE_CODE_ENABLE_TELEMETRY: runner(() => text(), 'Claude Code traces'),
  CLAUDE_CODE_ENHANCED_TELEMETRY_BETA: runner(() => text(), 'Claude Code traces'),
  CLAUDE_AGENT_SDK_CLIENT_APP: runner(() => z.string().default('pincer'), 'the client name Claude Code reports'),
  IS_SANDBOX: runner(() => z.string().default('1'), 'Claude Code runs with every permission granted'),
  OPENAI_API_KEY: runner(() => text(), 'OpenAI API key', { secret: true }),
  CODEX_API_KEY: runner(() => text(), 'Codex API key', { secret: true }),
  OPENCODE_API_KEY: runner(() => text(), 'OpenCode API key', { secret: true }),
  OPENAI_BASE_URL: runner(() => text(), 'an OpenAI-compatible endpoint', { defaultWords: 'https://api.openai.com/v1' }),
  CODEX_MODEL: runner(() => text(), 'the Codex model'),
  CODEX_HOME: runner(() => text(), 'where Codex keeps threads', { defaultWords: '<session>/.codex' }),
  CODEX_SANDBOX_MODE: runner(() => text(), 'Codex’s own sandbox', { defaultWords: 'workspace-write' }),
  CODEX_APPROVAL_POLICY: runner(() => text(), 'Codex approval policy', { defaultWords: 'never' }),
  CODEX_NETWORK_ACCESS: runner(() => text(), 'network of Codex commands'),
  CODEX_MAX_RETRIES: runner(() => text(), 'Codex request retries'),
  OPENCODE_MODEL: runner(() => text(), 'the OpenCode model'),
  OPENCODE_PROVIDER: runner(() => text(), 'the OpenCode provider id'),
  OPENCODE_BASE_URL: runner(() => text(), 'an OpenAI-compatible endpoint for OpenCode'),
  OPENCODE_BIN: runner(() => text(), 'the opencode binary', { defaultWords: 'from node_modules' }),
  OPENCODE_START_TIMEOUT_MS: runner(() => text(), 'OpenCode server start timeout', { defaultWords: '30000' }),
  OPENCODE_CONFIG_CONTENT: runner(() => text(), 'OpenCode configuration'),
  OPENCODE_DISABLE_AUTOUPDATE: runner(() => text(), 'OpenCode auto-update'),
  OPENCODE_DISABLE_MODELS_FETCH: runner(() => text(), 'OpenCode model list fetch'),
  MOCK_DELAY_MS: runner(() => text(), 'mock provider: delay before each answer', { defaultWords: '0' }),
  MOCK_LINGER_MS: runner(() => text(), 'mock provider: linger after an answer'),
  MOCK_NATIVE_MEDIA: runner(() => text(), 'mock provider: accepts native media'),
  MOCK_RECORD_FILE: runner(() => text(), 'mock provider: record prompts to this file'),
  MOCK_USAGE: runner(() => text(), 'mock provider: usage to report'),
} satisfies Record<string, Definition>;

type Registry = typeof REGISTRY;
export type SettingName = keyof Registry;
/** The parsed value of a setting (its default when unset). */
type ParserOf<N extends SettingName> = ReturnType<Registry[N]['parser']>;
export type SettingValue<N extends SettingName> = z.output<ParserOf<N>>;

const parsers = new Map<string, z.ZodType>();
/** The parser of `name`, made once. */
function parserOf(name: string, d: Definition): z.ZodType {
  let parser = parsers.get(name);
  if (!parser) parsers.set(name, (parser = d.parser()));
  return parser;
}

/** The default as the docs write it: the parser's own, else the words given. */
function defaultOf(name: string, d: Definition): string {
  const parsed = parserOf(name, d).safeParse(undefined);
  if (parsed.success && parsed.data !== undefined && !(Array.isArray(parsed.data) && parsed.data.length === 0) && parsed.data !== '')
    return String(parsed.data);
  return d.defaultWords ?? '';
}

export const SETTINGS: readonly Setting[] = Object.entries(REGISTRY).map(([name, d]: [string, Definition]) => ({
  name,
  reader: d.reader,
  secret: d.secret ?? false,
  get default() {
    return defaultOf(name, d);
  },
  description: d.description,
  source: d.source ?? 'user',
  get parse() {
    return parserOf(name, d);
  },
}));

/** What every process needs to run at all (a sandbox sets its own PATH and HOME). */
export const SYSTEM_VARIABLES: readonly string[] = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TERM',
  'TMPDIR',
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
];

const BY_NAME = new Map(SETTINGS.map((s) => [s.name, s]));

export function setting(name: string): Setting | undefined {
  return BY_NAME.get(name);
}

/** The parsers of `names`, as one zod object (what a loader parses the environment with). */
export function settingsSchema<const N extends SettingName>(names: readonly N[]): z.ZodObject<{ [K in N]: ParserOf<K> }> {
  return z.object(Object.fromEntries(names.map((name) => [name, parserOf(name, REGISTRY[name])]))) as unknown as z.ZodObject<{ [K in N]: ParserOf<K> }>;
}

/**
 * The settings a session's `config.json` carries in its `runner` section (what a runner on another machine gets in
 * place of the host's environment): Pincer's runner settings the administrator sets, never a secret, nor what the host
 * or a launcher sets per launch, nor the group's own provider and time zone (`provider`, `timezone` of the same file).
 */
const PROCESS_SETTINGS = new Set<string>([
  // read from the process's own environment before config.json is (the logger, the DB's busy timeout at load)
  'PINCER_LOG_LEVEL',
  'PINCER_BUSY_TIMEOUT_MS',
  // the group's model is `model` of the same file (the host folds PINCER_MODEL into it); a copy here would override it
  'PINCER_MODEL',
]);

export const RUNNER_DOCUMENT_SETTINGS: readonly SettingName[] = SETTINGS.filter(
  // Pincer's own only: a provider's or the collector's variables stay with the launch, whose sandbox passes only the
  // configured provider's and sends spans through the host's relay (src/container/env.ts)
  (s) => (s.reader === 'runner' || s.reader === 'both') && s.source === 'user' && !s.secret && s.name.startsWith('PINCER_') && !PROCESS_SETTINGS.has(s.name),
).map((s) => s.name as SettingName);

/** Variables a runner process may have: the runner's settings and the system's. */
export function isRunnerVariable(name: string): boolean {
  const s = BY_NAME.get(name);
  return s ? s.reader === 'runner' || s.reader === 'both' : SYSTEM_VARIABLES.includes(name);
}

/** Variables the runners' configuration may hold: a runner's, and the launcher's own. */
export function isRunnerConfigVariable(name: string): boolean {
  return isRunnerVariable(name) || BY_NAME.get(name)?.reader === 'launcher';
}

/** The host's own secrets (tokens it keeps for itself); `extra` names may never include these. */
export function isHostSecret(name: string): boolean {
  const s = BY_NAME.get(name);
  return s !== undefined && s.secret && s.reader === 'host';
}
