import { definitionsDir } from '../db/layout.js';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { CentralStore } from '../host/central-db/store.js';
import { SecretsStore } from '../host/secrets.js';
import type { McpServers } from '../db/mcp-servers.js';
import type { GenerationView } from '../host/generations/types.js';
import { checkMcpServers, secretNamesIn, type McpServerCheck } from './mcp-servers.js';
import { registerBuiltInProviders } from '../providers/index.js';
import { probeProviders, selectProviderFor } from '../providers/registry.js';
import { RUNNER_COMMANDS } from '../runner/commands.js';
import { loadRunnerConfig } from '../runner/config.js';
import { describeParams } from '../runtime/model-route.js';
import { loadResources } from '../runtime/resources/load.js';
import type { LoadedResources } from '../runtime/resources/types.js';
import type { ProviderProbe, Selection, SelectionErrorCode } from '../runtime/selection.js';
import { rawSetting } from '../shared/settings-load.js';

/**
 * `pincer doctor`'s findings: for each session folder (and its agent group folder `agent/`), the provider the runner
 * would start with and why — through the same configuration loader and selection policy the runner uses — and what
 * its resource package loads. Nothing is started.
 */
export interface SessionReport {
  name: string;
  dir: string;
  /** the runner configuration could not be read: the runner would exit 2 with this line */
  configError?: string;
  selection?: Selection;
  /** auto failed, but `pincer chat` sessions fall back to mock */
  chatFallbackNote?: boolean;
  /** a `pincer chat` session (terminal channel): decided as `pincer chat` starts its runners, `auto` falling back to mock */
  chat?: boolean;
  resources?: LoadedResources;
  /** the configured model and the request parameters its entries give it (`, params temperature 0.2, …`) */
  model?: string;
}

/** An agent group of the host's central DB: its provider policy decides for every session of the group. */
export interface GroupReport {
  name: string;
  id: string;
  dir: string;
  /** the group's provider policy as stored (`auto`, `claude`, …) */
  policy: string;
  selection: Selection;
  resources: LoadedResources;
  sessions: string[];
  /** the group's own MCP servers and what would keep each from starting */
  mcpServers: McpServerCheck[];
  /** those servers as configured (what `pincer doctor` starts to see them list their tools) */
  mcpServerSpecs: McpServers;
  /** every session of the group is a `pincer chat` one: a failing selection only concerns `pincer host`, not a failure */
  chatOnly?: boolean;
  /** the group's model-runtime generation as published (or built now when no host runs): `selection` is its */
  runtime?: GenerationView;
}

export interface DoctorReport {
  probes: ProviderProbe[];
  /** from `<home>/pincer.db`, when a host has created one */
  groups: GroupReport[];
  sessions: SessionReport[];
  /** sessions that cannot start (a configured provider missing its binary or key, bad config) */
  failures: number;
}

/** Inspect the agent groups of `home`'s central DB (if any) and `dirs` (session folders) under the environment `env`. */
export function runDoctor(dirs: string[], env: NodeJS.ProcessEnv, home?: string, runtimes: readonly GenerationView[] = []): DoctorReport {
  registerBuiltInProviders();
  const groups = home ? diagnoseGroups(home, env, runtimes) : [];
  const chatFolders = home ? terminalSessionFolders(home) : new Set<string>();
  const saved = home ? savedSessionProviders(home) : new Map<string, string>();
  const sessions = dirs.map((dir) => {
    const chat = chatFolders.has(path.resolve(dir));
    return diagnoseSession(dir, env, chat, home !== undefined && !chat, saved.get(path.resolve(dir)));
  });
  for (const group of groups) group.chatOnly = group.sessions.length > 0 && group.sessions.every((folder) => chatFolders.has(path.resolve(home!, folder)));
  const failures =
    groups.filter((g) => !g.selection.ok && !g.chatOnly).length +
    sessions.filter((s) => s.configError !== undefined || (s.selection && !s.selection.ok)).length;
  return { probes: probeProviders(env), groups, sessions, failures };
}

/**
 * The host's agent groups, read-only from `<home>/pincer.db` (the host may be running). The host starts each runner
 * with AGENT_PROVIDER set to the group's provider, so the group's policy is what decides; the shell's AGENT_PROVIDER
 * does not apply here.
 */
function diagnoseGroups(home: string, env: NodeJS.ProcessEnv, runtimes: readonly GenerationView[]): GroupReport[] {
  const file = path.join(home, 'pincer.db');
  if (!fs.existsSync(file)) return [];
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const store = new CentralStore(db, home);
    const sessions = store.listSessions();
    const groupEnv = { ...env, AGENT_PROVIDER: undefined };
    const secretNames = secretNamesIn(() => new SecretsStore(home).names());
    return store.listAgentGroups().map((group) => {
      const dir = path.join(home, 'groups', group.folder);
      const runtime = runtimes.find((view) => view.groupId === group.id);
      return {
        name: group.name,
        id: group.id,
        dir,
        policy: group.provider,
        // the group's prepared selection, as its generation has it; decided here only for a group no view covers
        selection: runtime
          ? selectionOfView(runtime)
          : selectProviderFor({ group: group.provider, model: group.model ? { id: group.model } : undefined }, groupEnv),
        ...(runtime ? { runtime } : {}),
        resources: loadResources(dir, RUNNER_COMMANDS),
        sessions: sessions.filter((s) => s.agentGroupId === group.id).map((s) => s.folder),
        mcpServers: checkMcpServers(group.mcpServers, secretNames, env),
        mcpServerSpecs: group.mcpServers,
      };
    });
  } finally {
    db.close();
  }
}

/** A generation view's prepared selection as the report's (no candidates: the generation keeps none for readers). */
function selectionOfView(view: GenerationView): Selection {
  const { selection } = view;
  if (selection?.ok) return { ok: true, provider: selection.provider, source: 'group', reason: selection.reason, candidates: [] };
  if (selection) return { ok: false, code: selection.code as SelectionErrorCode, source: 'group', message: selection.message, candidates: [] };
  // no generation was ever published: the build's failure is why the group cannot start
  return { ok: false, code: 'config', source: 'group', message: view.lastFailure?.error ?? 'no model runtime published yet', candidates: [] };
}

/** The folders of the home's `pincer chat` sessions (terminal channel), from the central DB when there is one. */
function terminalSessionFolders(home: string): Set<string> {
  const file = path.join(home, 'pincer.db');
  if (!fs.existsSync(file)) return new Set();
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const store = new CentralStore(db, home);
    return new Set(
      store
        .listSessions()
        .filter((s) => s.channelType === 'terminal')
        .map((s) => path.resolve(home, s.folder)),
    );
  } finally {
    db.close();
  }
}

/**
 * Each session folder of the central DB → its agent group's saved provider: the one the next runner gets. The
 * session's config.json may still name the provider of the last run's `--provider` (published for that run).
 */
function savedSessionProviders(home: string): Map<string, string> {
  const file = path.join(home, 'pincer.db');
  if (!fs.existsSync(file)) return new Map();
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const store = new CentralStore(db, home);
    return new Map(
      store.listSessions().flatMap((s) => {
        const group = store.getAgentGroup(s.agentGroupId);
        return group ? [[path.resolve(home, s.folder), group.provider] as const] : [];
      }),
    );
  } finally {
    db.close();
  }
}

function diagnoseSession(dir: string, baseEnv: NodeJS.ProcessEnv, chat: boolean, hostSession: boolean, savedProvider?: string): SessionReport {
  const report: SessionReport = { name: path.basename(dir), dir, ...(chat ? { chat } : {}) };
  // `pincer chat` lets `auto` fall back to the mock (src/cli/provider-views.ts chatEnv): its sessions run on it.
  const env = chat ? { ...baseEnv, PINCER_AUTO_FALLBACK: rawSetting(baseEnv, 'PINCER_AUTO_FALLBACK') || 'mock' } : baseEnv;
  let config;
  try {
    // A host's runner gets AGENT_PROVIDER from its session's config.json (set per launch), never the shell's, which
    // only seeds the default agent group's policy; `pincer chat` and `pincer runner` pass the shell's on.
    config = loadRunnerConfig({ ...env, ...(hostSession ? { AGENT_PROVIDER: undefined } : {}), PINCER_WORKSPACE: dir });
  } catch (err) {
    report.configError = err instanceof Error ? err.message : String(err);
    return report;
  }
  // a chat run with AGENT_PROVIDER in the shell runs that; otherwise the group's saved provider decides
  const policy = chat && rawSetting(baseEnv, 'AGENT_PROVIDER') ? config.provider : (savedProvider ?? config.provider);
  report.selection = selectProviderFor(
    {
      session: policy,
      group: config.groupProvider,
      model: config.model ? { id: config.model, provider: config.modelProvider } : undefined,
    },
    env,
  );
  if (!chat && !report.selection.ok && report.selection.message.startsWith('auto')) report.chatFallbackNote = true;
  if (config.model) {
    const provider = config.model.split('/')[0]?.toLowerCase() ?? '';
    report.model = config.model + describeParams({ ...config.modelProviders[provider]?.params, ...config.models[config.model]?.params });
  }
  // Reserved names: the runner's commands (provider-native ones depend on the provider and are not known here).
  report.resources = loadResources(definitionsDir(config.paths), RUNNER_COMMANDS);
  return report;
}

/** Session folders under `<home>/sessions/` (those holding a session.db), sorted. */
export function sessionFoldersUnder(home: string): string[] {
  const root = path.join(home, 'sessions');
  if (!fs.existsSync(root)) return [];
  return fs
    .readdirSync(root)
    .map((name) => path.join(root, name))
    .filter((dir) => fs.existsSync(path.join(dir, 'session.db')))
    .sort();
}
