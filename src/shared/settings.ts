/**
 * Every environment variable Pincer itself reads, in one typed list: its name, who reads it, whether it is a secret,
 * its default and one line of meaning (docs/configuration.md has the long form). The runner's environment is derived
 * from this list as an ALLOW-list: a runner gets the variables a runner reads and the few system ones below, never
 * "the host's environment less what we thought of" — a host variable nobody listed (`OPENAI_ADMIN_KEY`,
 * `ANTHROPIC_CUSTOM_HEADERS`, a cloud key) never reaches an agent. docs/security.md "What a runner's environment holds".
 */

/**
 * Who reads a variable: `host` (the host process only; never passed on), `launcher` (the host, where it starts a
 * runner: kept in the runners' configuration, never in a runner's own environment), `runner` (the runner, its
 * provider SDK or CLI), `both`.
 */
export type SettingReader = 'host' | 'launcher' | 'runner' | 'both';

export interface Setting {
  name: string;
  reader: SettingReader;
  /**
   * A credential or token. A host secret never leaves the host; a runner's secret (a provider key) is only ever given
   * to a runner as the credential proxy's placeholder (src/host/credential-proxy.ts).
   */
  secret: boolean;
  /** the default in words ('' when unset means off or "the SDK's own"). */
  default: string;
  description: string;
}

const S = (name: string, reader: SettingReader, def: string, description: string, secret = false): Setting => ({ name, reader, secret, default: def, description });

export const SETTINGS: readonly Setting[] = [
  // the host
  S('PINCER_HOME', 'host', '~/.pincer', 'the home: all data of this installation'),
  S('PINCER_DEFAULT_GROUP', 'host', 'main', 'group for unbound conversations; `none`: refuse them'),
  S('PINCER_SESSION_MODE', 'host', 'shared', 'the default group gives each thread its own session (`per-thread`)'),
  S('PINCER_ADMIN_USER_ID', 'host', '', 'admins of every group (the host checks admin rights itself)'),
  S('NANOCLAW_ADMIN_USER_ID', 'host', '', 'the admin user of a runner started by hand'),
  S('PINCER_GROUP_TRIGGER', 'host', 'mention', 'when the default group answers in a platform group chat'),
  S('PINCER_ALLOWED_USERS', 'host', '', 'platform users the default group answers'),
  S('PINCER_HTTP_HOST', 'host', '127.0.0.1', 'the HTTP API address'),
  S('PINCER_HTTP_HOSTNAMES', 'host', '', 'extra host names the HTTP API answers to (Host header) besides loopback and PINCER_HTTP_HOST'),
  S('PINCER_HTTP_TOKEN', 'host', '<home>/http-token', 'the HTTP API admin bearer token', true),
  S('PINCER_METRICS_TOKEN', 'host', '', 'bearer token for /metrics', true),
  S('PINCER_SSE_MAX_BUFFERED_BYTES', 'host', '1048576', 'unread bytes an SSE client may have'),
  S('PINCER_SESSION_SERVE_RUNNER', 'host', 'auto', 'the runner kind of each session-serve process'),
  S('PINCER_SESSION_ORPHAN_MS', 'host', '180000', 'a session-serve process without its host drains and exits after this'),
  S('PINCER_SESSION_REFUSE_FS', 'host', '', 'more file system types session-serve refuses'),
  S('PINCER_IDLE_TIMEOUT_MS', 'host', '300000', 'stop a runner idle this long'),
  S('PINCER_HEARTBEAT_TIMEOUT_MS', 'host', '30000', 'kill a runner whose heartbeat is older'),
  S('PINCER_RUNNER_START_TIMEOUT_MS', 'host', '60000', 'kill a runner that has not started after this'),
  S('PINCER_TURN_LIMIT_MS', 'host', '1800000', 'end a query busy with one batch longer than this'),
  S('PINCER_RUNNER_BACKOFF_MS', 'host', '1000', 'back-off base after an unexpected runner exit'),
  S('PINCER_RUNNER_BACKOFF_MAX_MS', 'host', '60000', 'back-off cap after unexpected runner exits'),
  S('PINCER_SWEEP_INTERVAL_MS', 'host', '1000', 'fallback period of each session sweep'),
  S('PINCER_STALE_MS', 'host', '2000', 'retry a processing row outside the live batch after this'),
  S('PINCER_RETRY_BASE_MS', 'host', '2000', 'retry back-off base'),
  S('PINCER_RETRY_MAX_MS', 'host', '300000', 'retry back-off cap'),
  S('PINCER_MAX_TRIES', 'host', '5', 'tries before a message fails'),
  S('PINCER_TASK_KEEP_RUNS', 'host', '20', 'finished runs kept per task'),
  S('PINCER_TASK_KEEP_DAYS', 'host', '7', 'days a finished task is kept'),
  S('PINCER_DELIVERY_ATTEMPTS', 'host', '5', 'delivery attempts per outbound row'),
  S('PINCER_DELIVERY_RETRY_MS', 'host', '500', 'delivery back-off base'),
  // where runners are started
  S('PINCER_RUNNER', 'launcher', 'auto', 'the runner kind: auto, process, docker, bwrap, session-serve'),
  S('PINCER_CONTAINER_IMAGE', 'launcher', 'pincer-node', 'the Docker runner image'),
  S('PINCER_CONTAINER_MEMORY', 'launcher', '2g', 'memory limit of a sandboxed runner'),
  S('PINCER_CONTAINER_CPUS', 'launcher', '1', 'CPU limit of a Docker runner'),
  S('PINCER_CONTAINER_PIDS', 'launcher', '512', 'process limit of a sandboxed runner'),
  S('PINCER_CONTAINER_NETWORK', 'launcher', 'none', 'the Docker network of a runner'),
  S('PINCER_CONTAINER_USER', 'launcher', '', 'uid[:gid] of a Docker runner'),
  S('PINCER_CONTAINER_ENV', 'launcher', '', 'extra variable names passed to every runner (e.g. HTTPS_PROXY)'),
  S('PINCER_UNSANDBOXED_SCRIPTS', 'launcher', '', '1: task scripts run in a plain process runner too (refused there otherwise)'),
  S('PINCER_BWRAP_NETWORK', 'launcher', 'none', 'none: only loopback in a bubblewrap runner; host: the host network'),
  S('DOCKER_HOST', 'launcher', '', 'the daemon the docker CLI talks to'),
  S('DOCKER_CONFIG', 'launcher', '', 'the docker CLI configuration folder'),
  S('DOCKER_CONTEXT', 'launcher', '', 'the docker CLI context'),
  S('DOCKER_CERT_PATH', 'launcher', '', 'the docker CLI TLS certificates'),
  S('DOCKER_TLS_VERIFY', 'launcher', '', 'the docker CLI TLS verification'),
  // both
  S('AGENT_PROVIDER', 'both', 'auto', 'the provider (the host sets each group’s for its runners)'),
  S('PINCER_MODEL', 'both', '', '<provider>/<model> of the built-in provider'),
  S('TZ', 'both', 'system zone', 'time zone (the host sets each group’s for its runners)'),
  S('PINCER_LOG_LEVEL', 'both', 'info', 'debug, info, warn, error'),
  S('PINCER_BUSY_TIMEOUT_MS', 'both', '10000', 'wait for another process’s lock on a session DB'),
  S('PINCER_STOP_GRACE_MS', 'both', '3000', 'grace of a runner being stopped'),
  S('PINCER_ATTACHMENT_ALLOW_HOSTS', 'both', '', 'where attachment URLs may point besides public addresses'),
  S('OTEL_EXPORTER_OTLP_ENDPOINT', 'both', '', 'OTLP/HTTP endpoint of traces'),
  S('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'both', '', 'OTLP/HTTP endpoint of traces (traces only)'),
  S('OTEL_EXPORTER_OTLP_HEADERS', 'both', '', 'headers of OTLP exports (a process runner exports itself)', true),
  S('OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'both', '', 'headers of OTLP trace exports', true),
  S('OTEL_SDK_DISABLED', 'both', '', '`true`: no tracing'),
  S('OTEL_EXPORTER_OTLP_PROTOCOL', 'runner', '', 'the OTLP protocol of a provider CLI’s telemetry'),
  S('OTEL_TRACES_EXPORTER', 'runner', '', 'a provider CLI’s trace exporter'),
  S('OTEL_METRICS_EXPORTER', 'runner', '', 'a provider CLI’s metrics exporter'),
  S('OTEL_LOGS_EXPORTER', 'runner', '', 'a provider CLI’s logs exporter'),
  // the runner
  S('PINCER_WORKSPACE', 'runner', '/workspace', 'the session folder (set by the launcher)'),
  S('PINCER_STOP_ON_STDIN_EOF', 'runner', '', '1: stop when stdin closes (set by the launcher)'),
  S('PINCER_CREDENTIAL_PROXY', 'runner', '', '1: behind the credential proxy (set by the host)'),
  S('PINCER_CREDENTIAL_PROXY_SOCKET', 'runner', '', 'the proxy socket inside a sandbox (set by the launcher)'),
  S('PINCER_UPSTREAM_ANTHROPIC_BASE_URL', 'runner', '', 'the real upstream behind the proxy (set by the host)'),
  S('PINCER_UPSTREAM_OPENAI_BASE_URL', 'runner', '', 'the real upstream behind the proxy (set by the host)'),
  S('PINCER_SANDBOX_NO_NETWORK', 'runner', '', 'the setting that gives a sandbox a network (set by the launcher)'),
  S('PINCER_AUTO_FALLBACK', 'runner', 'claude', 'what auto picks when no provider is usable'),
  S('PINCER_WORKER_PARALLELISM', 'runner', 'cores − 1', 'worker threads for CPU tasks'),
  S('PINCER_FORMAT_WORKER_BYTES', 'runner', '262144', 'format a batch this large on a worker'),
  S('PINCER_ATTACHMENT_WORKER_BYTES', 'runner', '65536', 'encode an attachment this large on a worker'),
  S('PINCER_WAKE', 'runner', 'watch', 'watch or poll the session DB'),
  S('PINCER_POLL_IDLE_MS', 'runner', '1000', 'poll interval when idle'),
  S('PINCER_POLL_ACTIVE_MS', 'runner', '500', 'poll interval during a query'),
  S('PINCER_HEARTBEAT_MS', 'runner', '5000', 'heartbeat period'),
  S('PINCER_BATCH_MAX_MESSAGES', 'runner', '50', 'messages per batch'),
  S('PINCER_BATCH_MAX_BYTES', 'runner', '524288', 'bytes per batch'),
  S('PINCER_SCRIPT_TIMEOUT_MS', 'runner', '30000', 'task pre-script timeout'),
  S('PINCER_SCRIPTS_REFUSED', 'runner', '', 'why this runner refuses task scripts (set by the launcher of a plain process)'),
  S('PINCER_SCRIPT_ENV_ALLOW', 'runner', '', 'variables task scripts may see besides PATH, HOME, TZ, LANG'),
  S('PINCER_DOWNLOAD_TIMEOUT_MS', 'runner', '15000', 'attachment download timeout'),
  S('PINCER_MAX_FILE_BYTES', 'runner', '', 'largest file the agent may send'),
  S('PINCER_TOOLS_INSTRUCTIONS', 'runner', '', 'the MCP tools’ instructions'),
  S('PINCER_MCP_CALL_MS', 'runner', '', 'timeout of a call to a user MCP server'),
  S('PINCER_MCP_START_MS', 'runner', '', 'start timeout of a user MCP server'),
  S('PINCER_MCP_RESULT_BYTES', 'runner', '', 'largest result of a user MCP server'),
  S('PINCER_MCP_IMAGE_BYTES', 'runner', '', 'largest image of a user MCP server'),
  S('PINCER_PROVIDER_TIMEOUT_MS', 'runner', '120000', 'how long the model may stay silent'),
  S('PINCER_CONTEXT_WINDOW', 'runner', '', 'the model’s context window'),
  S('PINCER_MODEL_MAX_RETRIES', 'runner', '2', 'retries of a model request'),
  S('PINCER_BASH_TIMEOUT_MS', 'runner', '120000', 'default bash tool timeout'),
  S('PINCER_TOOL_OUTPUT_CHARS', 'runner', '30000', 'tool output cut'),
  S('PINCER_CLAUDE_PREWARM', 'runner', '', '1: keep the next Claude Code process ready'),
  S('PINCER_CODE_MEMORY_MB', 'runner', '64', 'memory of a code-mode program'),
  S('PINCER_CODE_SLICE_MS', 'runner', '', 'time slice of a code-mode program'),
  S('PINCER_CODE_WAIT_MS', 'runner', '', 'how long code-mode `wait` waits'),
  S('PINCER_STDIN_DOCUMENT', 'runner', '', '1: a launch document (secrets) comes on stdin (set by the launcher)'),
  S('PINCER_TRACE_RELAY_SOCKET', 'runner', '', 'the host’s OTLP relay socket inside a sandbox (set by the launcher)'),
  S('PINCER_IMAGE_FINGERPRINT', 'runner', '', 'the Docker image the runner runs in (set by the launcher)'),
  // provider SDKs and CLIs (their keys reach a runner only as the proxy's placeholders)
  S('ANTHROPIC_API_KEY', 'runner', '', 'Anthropic API key', true),
  S('ANTHROPIC_AUTH_TOKEN', 'runner', '', 'Anthropic bearer token', true),
  S('CLAUDE_CODE_OAUTH_TOKEN', 'runner', '', 'Claude subscription token', true),
  S('ANTHROPIC_BASE_URL', 'runner', 'https://api.anthropic.com', 'the Messages API endpoint'),
  S('ANTHROPIC_MODEL', 'runner', '', 'Claude Code model override'),
  S('CLAUDE_CONFIG_DIR', 'runner', '~/.claude', 'where Claude Code keeps its sessions'),
  S('CLAUDE_TOOL_ALLOWLIST', 'runner', '', 'Claude Code tools allowed'),
  S('CLAUDE_DISALLOWED_TOOLS', 'runner', '', 'Claude Code tools refused'),
  S('CLAUDE_CODE_USE_BEDROCK', 'runner', '', 'Claude Code through Bedrock'),
  S('CLAUDE_CODE_USE_VERTEX', 'runner', '', 'Claude Code through Vertex'),
  S('CLAUDE_CODE_USE_FOUNDRY', 'runner', '', 'Claude Code through Foundry'),
  S('CLAUDE_CODE_MAX_RETRIES', 'runner', '', 'Claude Code request retries'),
  S('CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC', 'runner', '1', 'Claude Code sends nothing but model calls'),
  S('CLAUDE_CODE_ENABLE_TELEMETRY', 'runner', '', 'Claude Code traces'),
  S('CLAUDE_CODE_ENHANCED_TELEMETRY_BETA', 'runner', '', 'Claude Code traces'),
  S('CLAUDE_AGENT_SDK_CLIENT_APP', 'runner', 'pincer', 'the client name Claude Code reports'),
  S('IS_SANDBOX', 'runner', '1', 'Claude Code runs with every permission granted'),
  S('OPENAI_API_KEY', 'runner', '', 'OpenAI API key', true),
  S('CODEX_API_KEY', 'runner', '', 'Codex API key', true),
  S('OPENCODE_API_KEY', 'runner', '', 'OpenCode API key', true),
  S('OPENAI_BASE_URL', 'runner', 'https://api.openai.com/v1', 'an OpenAI-compatible endpoint'),
  S('CODEX_MODEL', 'runner', '', 'the Codex model'),
  S('CODEX_HOME', 'runner', '<session>/.codex', 'where Codex keeps threads'),
  S('CODEX_SANDBOX_MODE', 'runner', 'workspace-write', 'Codex’s own sandbox'),
  S('CODEX_APPROVAL_POLICY', 'runner', 'never', 'Codex approval policy'),
  S('CODEX_NETWORK_ACCESS', 'runner', '', 'network of Codex commands'),
  S('CODEX_MAX_RETRIES', 'runner', '', 'Codex request retries'),
  S('OPENCODE_MODEL', 'runner', '', 'the OpenCode model'),
  S('OPENCODE_PROVIDER', 'runner', '', 'the OpenCode provider id'),
  S('OPENCODE_BASE_URL', 'runner', '', 'an OpenAI-compatible endpoint for OpenCode'),
  S('OPENCODE_BIN', 'runner', '', 'the opencode binary'),
  S('OPENCODE_START_TIMEOUT_MS', 'runner', '30000', 'OpenCode server start timeout'),
  S('OPENCODE_CONFIG_CONTENT', 'runner', '', 'OpenCode configuration'),
  S('OPENCODE_DISABLE_AUTOUPDATE', 'runner', '', 'OpenCode auto-update'),
  S('OPENCODE_DISABLE_MODELS_FETCH', 'runner', '', 'OpenCode model list fetch'),
  S('MOCK_DELAY_MS', 'runner', '0', 'mock provider: delay before each answer'),
  S('MOCK_LINGER_MS', 'runner', '', 'mock provider: linger after an answer'),
  S('MOCK_NATIVE_MEDIA', 'runner', '', 'mock provider: accepts native media'),
  S('MOCK_RECORD_FILE', 'runner', '', 'mock provider: record prompts to this file'),
  S('MOCK_USAGE', 'runner', '', 'mock provider: usage to report'),
];

/** What every process needs to run at all (a sandbox sets its own PATH and HOME). */
export const SYSTEM_VARIABLES: readonly string[] = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TERM', 'TMPDIR', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR'];

const BY_NAME = new Map(SETTINGS.map((s) => [s.name, s]));

export function setting(name: string): Setting | undefined {
  return BY_NAME.get(name);
}

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
