import type { Selection } from '../../runtime/selection.js';
import type { ProxyUpstreams } from '../credential-proxy.js';

/**
 * Model-runtime generations: per agent group one prepared, numbered snapshot of what its runners can use — the
 * host's credentials, the model registry and the projected model catalogue — built by one owner
 * (src/host/generations/publisher.ts) and published whole. Readers (the credential proxy, `GET /v1/models`, the web
 * page, `pincer models`, `pincer doctor`, runner starts) read the published one; nobody searches again on their own.
 */

/** Where a credential's value came from. */
export type CredentialSource = 'secrets' | 'environment';

/**
 * The credentials the host can use, read at one moment from its environment and the secrets store. Shared by every
 * generation built from the same read. The values live only here and in the credential proxy's upstreams; never
 * serialise this object (the public view lists names and sources only).
 */
export interface HostCredentials {
  /** increases each time a read finds different values than the one before (the publish gate of credentials). */
  readonly version: number;
  /** the variables the host's selection, routes and proxy read: the runners' environment with the secrets on top. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** credential variables that are set, and where each came from (names only). */
  readonly sources: ReadonlyMap<string, CredentialSource>;
  /** what the credential proxy forwards to, with which key. */
  readonly upstreams: ProxyUpstreams;
}

/** Where a registry entry came from. */
export type ModelSource = 'catalogue' | 'configured' | 'extension';

/** One model the group can name: from pi-ai's catalogue, or the group's configured model (`<provider>/<model>`). */
export interface RegistryEntry {
  ref: string;
  source: ModelSource;
  name: string;
  contextWindow?: number;
  maxTokens?: number;
  /** US dollars per million tokens, from the catalogue */
  price?: ModelPrice;
  /** an extension's model: the runtime its extension registers for it */
  harness?: string;
}

export interface ModelPrice {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** A model as the group can use it now: route, harness, limits, prices, and why not when it cannot. */
export interface CatalogueModel {
  /** `anthropic/claude-sonnet-4-5` */
  ref: string;
  /** the model provider (prefix) */
  provider: string;
  /** the id sent to the API */
  id: string;
  name: string;
  source: ModelSource;
  /** the group's configured model */
  configured: boolean;
  /** wire API (`anthropic-messages`, `openai-responses`, `openai-completions`); null: the runtime's catalogue decides */
  api: string | null;
  /** the upstream endpoint (no credentials in it); null: the catalogue's default */
  endpoint: string | null;
  /** requests go through the host's credential proxy (runners never hold the key) */
  viaProxy: boolean;
  contextWindow: number | null;
  maxTokens: number | null;
  price: ModelPrice | null;
  /** the runtime (harness) the selection rules choose for this model under the group's policy; null when none can */
  harness: string | null;
  available: boolean;
  /** why the model cannot be used now (no key, no harness, a bad route) */
  unavailable?: string;
}

/** One agent group's published generation. Frozen: a reader can keep it as long as it likes. */
export interface ModelGeneration {
  readonly groupId: string;
  readonly groupName: string;
  /** per group, 1, 2, 3, …: every part below belongs to this number */
  readonly number: number;
  readonly builtAt: string;
  /** the inputs it was built from (the group's configuration generation, credentials version): its publish state */
  readonly inputs: string;
  readonly credentials: HostCredentials;
  /** the group's configured model (`agent_groups.model`, else the runners' PINCER_MODEL), if any */
  readonly model: string | null;
  /** the group's prepared selection: the runtime its runners start with, decided in the group's own scope */
  readonly selection: Selection;
  readonly registry: readonly RegistryEntry[];
  readonly catalogue: readonly CatalogueModel[];
}

/** A build that did not replace the published generation, and why. */
export interface BuildFailure {
  at: string;
  /** the inputs the failed build saw: a retry with the same inputs fails at once, without building again */
  inputs: string;
  error: string;
}

/** What readers outside the host's process see of a group's generation: no credential value, ever. */
export interface GenerationView {
  group: string;
  groupId: string;
  /** the published generation's number; null when none was ever published */
  generation: number | null;
  builtAt: string | null;
  /** the configuration or credentials changed and the replacement is not published yet */
  stale: boolean;
  /** the last build that failed after (or instead of) the published one */
  lastFailure: BuildFailure | null;
  credentials: { name: string; source: CredentialSource }[];
  model: string | null;
  selection: { ok: true; provider: string; reason: string } | { ok: false; code: string; message: string } | null;
  models: CatalogueModel[];
}
