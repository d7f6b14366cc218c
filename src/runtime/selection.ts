/**
 * Provider selection policy (OpenClaw "运行时选择"; issue 9). Pure: everything it knows comes in as arguments, so the
 * runner, `pincer doctor` and the host decide the same way.
 *
 * Layers, first set one wins: the session's policy (`sessions.agent_provider`), the agent group's
 * (`agent_groups.agent_provider`), the configured model's entry. Unset, empty or `default` means "inherit"; when
 * nothing is set the result is `auto`. An explicit name is used exactly or fails closed (unknown, not installed,
 * no credentials). Only `auto` chooses: the first provider (in `AUTO_PREFERENCE` order) that is installed and has
 * credentials, else the fallback (`claude`) if it has credentials. A failed run is never replayed on another provider: this runs once, at
 * start-up.
 */
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
  /** whether `auto` may choose it */
  auto: boolean;
}

export type PolicySource = 'session' | 'group' | 'model' | 'auto';

export interface SelectionInput {
  /** the session's policy (runner: AGENT_PROVIDER, else config.json `provider`) */
  session?: string;
  /** the agent group's policy (runner: config.json `groupProvider`) */
  group?: string;
  /** the configured model and its entry's provider, if the model has an entry */
  model?: { id: string; provider?: string };
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

export type SelectionErrorCode = 'unknown' | 'not-installed' | 'no-credentials';

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
  ];
  for (const [source, configured] of layers) {
    const raw = (configured ?? '').trim();
    if (INHERIT.has(raw.toLowerCase())) continue;
    const name = input.normalise(raw);
    const where = source === 'model' ? `model entry "${input.model?.id}"` : `${source} policy`;
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
    return { ok: false, code: 'unknown', source, candidates, message: `unknown provider "${raw}"${source === 'session' ? '' : ` in the ${where}`} (known: ${known})` };
  }
  if (!probe.installed) {
    return { ok: false, code: 'not-installed', source, candidates, message: `provider "${name}" (${why}) is not installed: ${probe.notInstalled}` };
  }
  if (!probe.credentials) {
    return { ok: false, code: 'no-credentials', source, candidates, message: `provider "${name}" (${why}) has no credentials: ${probe.noCredentials}` };
  }
  return { ok: true, provider: name, source, candidates, reason: why };
}

function chooseAuto(input: SelectionInput, candidates: CandidateReport[], why: string, source: PolicySource): Selection {
  const usable = input.probes.find((p) => p.auto && p.installed && (p.autoCredentials ?? p.credentials));
  if (usable) return { ok: true, provider: usable.name, source, candidates, reason: `auto (${why}): first installed provider with credentials` };
  const fallback = input.normalise(input.fallback ?? 'claude');
  const probe = input.probes.find((p) => p.name === fallback);
  if (!probe) {
    return { ok: false, code: 'unknown', source, candidates, message: `auto (${why}): no provider is usable and the fallback "${fallback}" is unknown` };
  }
  if (!probe.installed) {
    return {
      ok: false,
      code: 'not-installed',
      source,
      candidates,
      message: `auto (${why}): no provider is usable and the fallback "${fallback}" is not installed: ${probe.notInstalled}`,
    };
  }
  if (!probe.credentials) {
    // Fail here, in one line, rather than start a provider that can only fail (or retry for minutes) later.
    return {
      ok: false,
      code: 'no-credentials',
      source,
      candidates,
      message: `auto (${why}): no provider is usable and the fallback "${fallback}" has no credentials: ${probe.noCredentials}`,
    };
  }
  return { ok: true, provider: fallback, source, candidates, reason: `auto (${why}): no provider is usable, falling back to ${fallback}` };
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
