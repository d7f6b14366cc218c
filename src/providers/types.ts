/**
 * The provider contract (docs/providers.md). The runner core decides what to send and what to do with
 * results; a provider only decides how to talk to its SDK. Nothing about messages, routing or the database here.
 */

import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ModelSettings } from '../db/model-settings.js';
import type { TurnUsage } from '../shared/usage.js';

/**
 * What a turn cost (tokens, cache, USD, model, duration): the `usage` of a `result` event. Defined in
 * src/shared/usage.ts so the session DB code below the providers can store it.
 */
export type { ModelUsage, TurnUsage } from '../shared/usage.js';

/** Structured prompt content for multimodal prompts (Claude's MessageParam content blocks). */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; source: { type: 'base64'; media_type: string; data: string } }
  | { type: 'document'; source: { type: 'base64'; media_type: 'application/pdf'; data: string } };

/**
 * An MCP server in the normalised form, values resolved (no secret references left); each provider converts it to its
 * SDK's configuration. A stdio server is a child process; an HTTP server speaks MCP's Streamable HTTP.
 */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

export interface McpStdioServerConfig {
  type?: 'stdio';
  command: string;
  args: string[];
  /** the server's whole environment (SDKs do not pass their own on) */
  env: Record<string, string>;
  /** absolute working directory; the provider's own when absent */
  cwd?: string;
  /**
   * the names in `env` whose values are the host's secrets: a provider keeps them off every command line and out of
   * the environment its agent's commands inherit (only the server's own process gets them).
   */
  secretKeys?: string[];
  /**
   * Pincer's own server: the agent cannot work without it, so a provider waits for it (a failed start fails the turn)
   * and leaves its call timeouts to it (`ask_user_question` may wait for days). The user's servers have the start
   * deadline and call timeout of src/providers/mcp-settings.ts, and are left out when they cannot start.
   */
  required?: boolean;
}

export interface McpHttpServerConfig {
  type: 'http';
  url: string;
  headers: Record<string, string>;
  /** the names in `headers` whose values are the host's secrets (as `McpStdioServerConfig.secretKeys`) */
  secretKeys?: string[];
}

/**
 * An MCP server the runner can run inside its own process (Pincer's own tools). A provider that runs in the runner's
 * process (the built-in runtime) connects to it instead of starting the same-named entry of `mcpServers` as a child:
 * the same server and configuration, no extra process. SDK-driven providers ignore it.
 */
export interface LinkedMcpServer {
  /** Start the server; resolves to the client's end of a linked transport pair. Rejects with a clear message. */
  connect(): Promise<LinkedMcpConnection>;
}

export interface LinkedMcpConnection {
  /** the client's end: give it to an MCP client's `connect()` */
  transport: Transport;
  /** after the client has closed: let the server finish its open calls and release its DB connection */
  close(): Promise<void>;
}

export interface QueryInput {
  /** The first prompt, already formatted by the runner. A string, or content blocks for multimodal prompts. */
  prompt: string | ContentBlock[];
  /** The provider session to resume, if any (captured from an earlier `init` event). */
  sessionId?: string;
  /** A provider-specific resume point inside the session (Claude: the last assistant message uuid); may be ignored. */
  resumeAt?: string;
  /** Working directory of the agent. */
  cwd: string;
  /**
   * The agent group's folder (read-only): where its package.json runtime settings are read. `cwd` when absent (a
   * session folder with no group folder of its own).
   */
  groupDir?: string;
  /** MCP servers to start for the agent, by name. */
  mcpServers: Record<string, McpServerConfig>;
  /** System prompt / developer instructions. */
  systemPrompt?: string;
  /** Environment of the SDK process. SDKs replace the child's environment with it, so it is complete. */
  env: Record<string, string | undefined>;
  /** Extra directories the agent may use. */
  additionalDirectories?: string[];
  /**
   * The agent group's skills (resource package), for providers with `nativeSkills`: load them the SDK's way (Claude:
   * skill folders with SKILL.md). Other providers get them in `systemPrompt` instead and never see this.
   */
  skills?: { name: string; description: string; file: string; dir: string }[];
}

/** The parts of a query that stay the same for a runner, known before the first message arrives. */
export type PrepareInput = Omit<QueryInput, 'prompt' | 'sessionId' | 'resumeAt'>;

export interface AgentQuery {
  /** Push a follow-up message into the active query. Must not throw; call only before `end()`. */
  push(message: string): void;
  /** No more input will come; the query finishes once it has answered what it was given. */
  end(): void;
  /** The output events. Ends when the query is finished. Providers encode failures as `error` events. */
  events: AsyncIterable<ProviderEvent>;
  /** Stop now (shutdown, error). Idempotent. */
  abort(): void;
}

export type ProviderEvent =
  /** Once per query, when the provider establishes or resumes its session. */
  | { type: 'init'; sessionId: string }
  /**
   * A complete answer; may come several times per query. `resumeAt` is an optional resume point to store. `usage` is
   * what the turn that produced it cost, when the provider knows (the runner records it with the answer).
   */
  | { type: 'result'; text: string | null; resumeAt?: string; usage?: TurnUsage }
  /** A failure. `classification` is e.g. 'quota', 'auth', 'transport'. */
  | { type: 'error'; message: string; retryable: boolean; classification?: string }
  /** Informational; logged, never acted upon. */
  | { type: 'progress'; message: string }
  /**
   * A tool call started (`args`: its arguments as the model gave them, or a string describing them) or ended (`ok`:
   * whether it succeeded). `id` pairs the two; it is unique within the query. The runner records them for the host to
   * show (src/db/tool-activity.ts) and acts on nothing else: a provider that cannot tell sends none.
   */
  | { type: 'tool'; phase: 'start'; id: string; name: string; args?: unknown }
  | { type: 'tool'; phase: 'end'; id: string; ok: boolean }
  /**
   * Something the chat should know that is not an answer (an MCP server of the user's left out because it did not
   * start): the runner writes it to the conversation as it is; it completes nothing.
   */
  | { type: 'notice'; text: string };

export interface AgentProvider {
  /** Start a query. Synchronous: asynchronous set-up happens inside `events`. */
  query(input: QueryInput): AgentQuery;
  /** Slash commands the provider handles natively; the runner passes these through raw (e.g. `/compact`). */
  readonly nativeSlashCommands: readonly string[];
  /** Media the provider takes as native content blocks; everything else reaches it as `[file available at: …]`. */
  readonly nativeMedia?: readonly ('image' | 'pdf')[];
  /** Whether the provider loads skills itself from `QueryInput.skills` (Claude); otherwise they go in the system prompt. */
  readonly nativeSkills?: boolean;
  /** True when the provider archives transcripts itself (Claude's PreCompact hook); else the runner does after each query. */
  readonly archivesTranscripts?: boolean;
  /**
   * Start expensive set-up (OpenCode: its local server) ahead of the first query, with what every query of this runner
   * will pass. Must not throw and returns at once; a query still finds the set-up unfinished or failed and handles it.
   */
  prepare?(input: PrepareInput): void;
  /** Release anything kept between queries (servers, child processes). Called once when the runner stops. */
  close?(): Promise<void>;
}

/** What a provider factory receives. Provider settings (keys, model) come from `env`, not from this interface. */
export interface ProviderConfig {
  env: Record<string, string | undefined>;
  /** model override from config.json, if any. */
  model?: string;
  /** model and provider entries of config.json (route settings), for providers that read them (the built-in runtime). */
  models?: Record<string, ModelSettings>;
  modelProviders?: Record<string, ModelSettings>;
  /** tools extensions registered (src/providers/extensions.ts), for providers that run tools themselves (the built-in runtime) */
  extensionTools?: ExtensionTool[];
  /** entries of `mcpServers` the runner can serve in its own process, by name (see LinkedMcpServer) */
  linkedMcpServers?: Record<string, LinkedMcpServer>;
  log: (message: string) => void;
}

/** What an extension's tool returns: text, or content blocks. Throw to report a failure to the model. */
export type ExtensionToolResult = string | { content: ({ type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string })[] };

/** A tool an extension registers for the built-in runtime (src/providers/extensions.ts). */
export interface ExtensionTool {
  /** the name the model calls: letters, digits, `_` and `-` */
  name: string;
  description: string;
  /** a JSON schema of the arguments (`{type: 'object', properties: …}`) */
  parameters: Record<string, unknown>;
  execute(args: Record<string, unknown>, context: { signal?: AbortSignal; cwd: string }): Promise<ExtensionToolResult> | ExtensionToolResult;
}
