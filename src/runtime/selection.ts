/**
 * Provider (runtime) selection policy. Pure: everything it knows comes in as arguments, so
 * the runner, `pincer doctor` and the host decide the same way.
 *
 * Layers, first set one wins: the session's policy (`sessions.agent_provider`), the agent group's
 * (`agent_groups.agent_provider`), the configured model's entry, then the entry of the model's provider (a model entry
 * wins over a provider entry). Unset, empty or `default` means "inherit"; when nothing is set the result is `auto`.
 * An explicit name is used exactly or fails closed (unknown, not installed, no credentials).
 *
 * Only `auto` chooses. With a configured `<provider>/<model>` it looks at the model's effective route
 * (src/runtime/model-route.ts): the first registered harness that supports that route (and can run here), else the
 * built-in runtime (`pincer`). A provider or model prefix alone never selects a harness: a harness supports a route by
 * its API, endpoint and request behaviour (Codex: only the exact official HTTPS Responses endpoints with no authored
 * overrides). Plaintext HTTP to an official endpoint is refused whatever the policy. With no such model, `auto` takes
 * the first SDK provider (in `AUTO_PREFERENCE` order) that is installed and has credentials, else the fallback
 * (`claude`; `mock` in `pincer chat`) if it has credentials. A failed run is never replayed on another runtime: this
 * runs once, at start-up.
 */
import { describeRoute, type ModelRoute } from './model-route.js';

/** The built-in runtime's registry name (aliases `builtin`, `openclaw`, `pi`). */
export const BUILTIN_PROVIDER = 'pincer';

export interface ProviderProbe {
  name: string;
  /** registered in this build, SDK and binaries present */
  installed: boolean;
  /** why not installed */
  notInstalled?: string;
  credentials: boolean;
  /** credentials good enough for `auto` to choose it (stricter for some: an API key, not a stored login); default `credentials` */
  autoCredentials?: boolean;
  /** what to set when credentials are missing */
  noCredentials?: string;
  /** whether `auto` may choose it (without a model route) */
  auto: boolean;
  /** a harness that supports the configured model's route (the selection's `route`) */
  supportsRoute?: boolean;
}

export type PolicySource = 'session' | 'group' | 'model' | 'model-provider' | 'auto';

export interface SelectionInput {
  /** the session's policy (runner: AGENT_PROVIDER, else config.json `provider`) */
  session?: string;
  /** the agent group's policy (runner: config.json `groupProvider`) */
  group?: string;
  /** the configured model, its entry's policy and its provider entry's policy */
  model?: { id: string; provider?: string; providerEntry?: string };
  /** the configured model's effective route, when it is written `<provider>/<model>` */
  route?: ModelRoute;
  /** why the configured model has no usable route (e.g. plaintext HTTP to an official endpoint): refused */
  routeError?: string;
  /** every known provider, in `auto` preference order */
  probes: ProviderProbe[];
  /** name normalisation (the registry's: lower case, aliases) */
  normalise: (name: string) => string;
  /** what `auto` falls back to when no candidate is usable. Default `claude`. */
  fallback?: string;
}

export interface CandidateReport {
  name: string;
  usable: boolean;
  /** `ok`, or what is missing */
  status: string;
}

export type SelectionErrorCode = 'unknown' | 'not-installed' | 'no-credentials' | 'insecure-route' | 'config';

export type Selection =
  | { ok: true; provider: string; source: PolicySource; reason: string; candidates: CandidateReport[] }
  | { ok: false; code: SelectionErrorCode; source: PolicySource; message: string; candidates: CandidateReport[] };

const INHERIT = new Set(['', 'default']);

export function selectProvider(input: SelectionInput): Selection {
  const candidates = input.probes.map(describeCandidate);
  const layers: [PolicySource, string | undefined][] = [
    ['session', input.session],
    ['group', input.group],
    ['model', input.model?.provider],
    ['model-provider', input.model?.providerEntry],
  ];
  if (input.routeError && /plaintext HTTP/.test(input.routeError)) {
    return { ok: false, code: 'insecure-route', source: 'auto', candidates, message: input.routeError };
  }
  for (const [source, configured] of layers) {
    const raw = (configured ?? '').trim();
    if (INHERIT.has(raw.toLowerCase())) continue;
    const name = input.normalise(raw);
    const where =
      source === 'model'
        ? `model entry "${input.model?.id}"`
        : source === 'model-provider'
          ? `provider entry "${input.route?.provider ?? input.model?.id.split('/')[0]}"`
          : `${source} policy`;
    if (name === 'auto') return chooseAuto(input, candidates, `${where} "${raw}"`, source);
    return checkExplicit(input, candidates, { name, raw, where }, source);
  }
  return chooseAuto(input, candidates, 'no policy set', 'auto');
}

function checkExplicit(
  input: SelectionInput,
  candidates: CandidateReport[],
  { name, raw, where }: { name: string; raw: string; where: string },
  source: PolicySource,
): Selection {
  const why = `${where} "${raw}"`;
  const probe = input.probes.find((p) => p.name === name);
  if (!probe) {
    const known = input.probes.map((p) => p.name).join(', ');
    return {
      ok: false,
      code: 'unknown',
      source,
      candidates,
      message: `unknown provider "${raw}"${source === 'session' ? '' : ` in the ${where}`} (known: ${known})`,
    };
  }
  if (!probe.installed) {
    return { ok: false, code: 'not-installed', source, candidates, message: `provider "${name}" (${why}) is not installed: ${probe.notInstalled}` };
  }
  if (name === BUILTIN_PROVIDER) {
    // The built-in runtime runs a model, so no model (or one it cannot reach) is refused here, in one line, instead
    // of a runner that starts only to fail and be retried with back-off.
    if (!input.model) {
      return {
        ok: false,
        code: 'config',
        source,
        candidates,
        message: `provider "${name}" (${why}) has no model: set PINCER_MODEL=<provider>/<model> (anthropic/claude-sonnet-4-5, openai/gpt-5, local/qwen3:8b) or "model" in config.json`,
      };
    }
    if (input.routeError) return { ok: false, code: 'config', source, candidates, message: `provider "${name}" (${why}): ${input.routeError}` };
  }
  if (!probe.credentials) {
    return { ok: false, code: 'no-credentials', source, candidates, message: `provider "${name}" (${why}) has no credentials: ${probe.noCredentials}` };
  }
  return { ok: true, provider: name, source, candidates, reason: why };
}

function chooseAuto(input: SelectionInput, candidates: CandidateReport[], why: string, source: PolicySource): Selection {
  if (input.route) return chooseForRoute(input, input.route, candidates, why, source);
  const usable = input.probes.find((p) => p.auto && p.installed && (p.autoCredentials ?? p.credentials));
  if (usable) return { ok: true, provider: usable.name, source, candidates, reason: `auto (${why}): first installed provider with credentials` };
  return fallBack(input, candidates, why, source);
}

/** No candidate can run: the configured fallback (`claude`; `mock` in `pincer chat`), said so in the reason. */
function fallBack(input: SelectionInput, candidates: CandidateReport[], why: string, source: PolicySource): Selection {
  const fallback = input.normalise(input.fallback ?? 'claude');
  const probe = input.probes.find((p) => p.name === fallback);
  const refuse = (code: 'unknown' | 'not-installed' | 'no-credentials', what: string): Selection => ({
    ok: false,
    code,
    source,
    candidates,
    message: `auto (${why}): no provider is usable and the fallback "${fallback}" ${what}`,
  });
  if (!probe) return refuse('unknown', 'is unknown');
  if (!probe.installed) return refuse('not-installed', `is not installed: ${probe.notInstalled}`);
  // Fail here, in one line, rather than start a provider that can only fail (or retry for minutes) later.
  if (!probe.credentials) return refuse('no-credentials', `has no credentials: ${probe.noCredentials}`);
  return { ok: true, provider: fallback, source, candidates, reason: `auto (${why}): no provider is usable, falling back to ${fallback}` };
}

/** `auto` for a model with a route: a harness that supports the route, else the built-in runtime, else the fallback. */
function chooseForRoute(input: SelectionInput, route: ModelRoute, candidates: CandidateReport[], why: string, source: PolicySource): Selection {
  const harness = input.probes.find((p) => p.supportsRoute && p.name !== BUILTIN_PROVIDER && p.installed && (p.autoCredentials ?? p.credentials));
  if (harness) {
    return {
      ok: true,
      provider: harness.name,
      source,
      candidates,
      reason: `auto (${why}): harness ${harness.name} supports the route ${describeRoute(route)}`,
    };
  }
  const builtin = input.probes.find((p) => p.name === BUILTIN_PROVIDER);
  if (builtin?.installed && builtin.credentials) {
    return {
      ok: true,
      provider: BUILTIN_PROVIDER,
      source,
      candidates,
      reason: `auto (${why}): the built-in runtime for ${describeRoute(route)} (no harness claims this route)`,
    };
  }
  const missing = !builtin
    ? 'is not registered'
    : !builtin.installed
      ? `is not installed: ${builtin.notInstalled}`
      : `has no credentials: ${builtin.noCredentials}`;
  return fallBack(input, candidates, `${why}; the built-in runtime ${missing}`, source);
}

function describeCandidate(probe: ProviderProbe): CandidateReport {
  if (!probe.installed) return { name: probe.name, usable: false, status: `not installed (${probe.notInstalled})` };
  if (!probe.credentials) return { name: probe.name, usable: false, status: `no credentials (${probe.noCredentials})` };
  if (probe.auto && probe.autoCredentials === false) return { name: probe.name, usable: true, status: 'ok if chosen; auto skips it here' };
  return { name: probe.name, usable: true, status: 'ok' };
}

/** One log line: the decision, its reason and every candidate. */
export function describeSelection(selection: Selection): string {
  const candidates = selection.candidates.map((c) => `${c.name}: ${c.status}`).join('; ');
  const head = selection.ok ? `provider ${selection.provider}: ${selection.reason}` : selection.message;
  return `${head} [candidates: ${candidates}]`;
}
