import type { Command } from 'commander';
import fs from 'node:fs';
import path from 'node:path';
import { resolveHome } from '../host/config.js';
import { savedChatGroup } from '../host/chat-group.js';
import { describePlatforms } from '../host/platforms/catalog.js';
import { PincerError } from '../shared/errors.js';
import { credentialEnvironment } from '../host/credential-proxy.js';
import { SecretsStore } from '../host/secrets.js';
import { currentViews } from '../host/generations/current-views.js';
import type { GenerationView } from '../host/generations/types.js';
import { readLock } from '../host/home-lock.js';
import { errorMessage } from '../shared/log.js';
import { chatSelection, describeChoice, hostSelection } from './provider-views.js';
import { describeResources } from '../runtime/resources/prompt-commands.js';
import { runDoctor, sessionFoldersUnder, type DoctorReport } from '../doctor/report.js';
import { resolveRunnerKind, UNSANDBOXED_WARNING } from '../host/runner-kind.js';
import { describeLimits } from '../container/index.js';
import { probeModelServer } from '../runtime/model-server-probe.js';
import { startMcpServers } from '../doctor/mcp-start.js';
import { mcpClientSettings } from '../providers/mcp-settings.js';
import { rawSetting, readSetting, settingOrDefault } from '../shared/settings-load.js';
import { runnerLimit } from '../host/runner-admission.js';
import { describeInotify, inotifyLimits } from '../doctor/inotify.js';

/**
 * `pincer doctor`: which provider each session's runner would start with and why, whether its binary and key are
 * there, and what its agent group's resource package loads (with every problem). Exit 1 when a session cannot start.
 */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('check providers, provider selection, resource packages of each session, and chat platforms')
    .option('--home <dir>', 'data directory to check (default: PINCER_HOME, else ~/.pincer)')
    .option('--workspace <dir...>', 'check these session folders instead')
    .option(
      '--mcp-start',
      "also start each agent group's own MCP servers once to count their tools (as plain processes of the doctor, outside any sandbox, with their secrets)",
    )
    .action(async (options: { home?: string; workspace?: string[]; mcpStart?: boolean }) => {
      const home = resolveHome(process.env, options.home);
      for (const dir of options.workspace ?? []) if (!fs.existsSync(dir)) throw new PincerError('invalid-input', `--workspace ${dir}: no such folder`);
      const dirs = options.workspace?.map((dir) => path.resolve(dir)) ?? sessionFoldersUnder(home);
      // The host's credentials: its environment with the secrets store's keys on top, as the credential proxy has them.
      let secretsProblem: string | undefined;
      let secrets: ReadonlyMap<string, string> = new Map();
      try {
        secrets = new SecretsStore(home).read();
      } catch (err) {
        secretsProblem = errorMessage(err);
      }
      const env = credentialEnvironment(process.env, secrets);
      const report = runDoctor(dirs, env, options.workspace ? undefined : home, options.workspace ? [] : readableViews(home, secretsProblem));
      if (options.mcpStart === true) await startGroupsMcpServers(report, env, secrets);
      const platforms = describePlatforms(process.env);
      if (!options.workspace) process.stdout.write(describeHome(home));
      process.stdout.write(
        renderCommands(report, env, options.workspace ? undefined : savedChatGroup(home, settingOrDefault(process.env, 'PINCER_DEFAULT_GROUP'))),
      );
      process.stdout.write(await describeRunners(process.env));
      const admission = describeAdmission(process.env);
      process.stdout.write(`${admission.line}\n${describeInotify(inotifyLimits())}\n`);
      const server = await probeModelServer(env);
      if (server) process.stdout.write(server.problem ? `✗ model server: ${server.problem}\n` : `model server: ${server.url} (${server.source}) answers\n`);
      if (secretsProblem) process.stdout.write(`✗ secrets: ${secretsProblem} (pincer host does not start with it)\n`);
      process.stdout.write(renderReport(report, options.workspace ? undefined : home, platforms.lines));
      process.exitCode = report.failures > 0 || platforms.incomplete > 0 || secretsProblem || server?.problem || !admission.ok ? 1 : 0;
    });
}

/**
 * The home's model-runtime generations, as the running host published them (else built now, as a host would): what
 * the report's agent groups read. None when they cannot be built (a bad secrets file, reported on its own line).
 */
export function readableViews(home: string, secretsProblem?: string): GenerationView[] {
  if (secretsProblem && !readLock(home)) return [];
  try {
    return currentViews(home, process.env).views;
  } catch {
    return []; // the secrets file changed under us: its line says why
  }
}

/** Start each group's own MCP servers that have no known problem, all at once, and note what each did. */
async function startGroupsMcpServers(report: DoctorReport, env: NodeJS.ProcessEnv, secrets: ReadonlyMap<string, string>): Promise<void> {
  const settings = mcpClientSettings(env);
  await Promise.all(
    report.groups.map(async (group) => {
      const startable = group.mcpServers.filter((check) => check.problems.length === 0).map((check) => check.name);
      if (startable.length === 0) return;
      const servers = Object.fromEntries(startable.map((name) => [name, group.mcpServerSpecs[name]!]));
      const results = await startMcpServers({ agentDir: group.dir, servers }, { env, secret: (name) => secrets.get(name), settings });
      for (const check of group.mcpServers) check.started = results.get(check.name) ?? check.started;
    }),
  );
}

/** The home checked, and on a fresh machine what the first `pincer chat` or `pincer host` will create there. */
export function describeHome(home: string): string {
  if (fs.existsSync(path.join(home, 'pincer.db'))) return `home ${home}\n`;
  const what = fs.existsSync(home) ? 'has no central DB yet' : 'does not exist yet';
  return `home ${home} ${what}: the first pincer chat or pincer host creates it (pincer.db, sessions/, groups/main/, logs/) and the agent group main with the provider below\n`;
}

/** The failing lines alone, each naming what it is about: what the control page's Doctor view shows first. */
export function problemLines(report: DoctorReport): string[] {
  const lines: string[] = [];
  for (const group of report.groups) if (!group.selection.ok && !group.chatOnly) lines.push(`agent group ${group.name}: ${group.selection.message}`);
  for (const session of report.sessions) {
    if (session.configError) lines.push(`session ${session.name}: config: ${session.configError}`);
    else if (session.selection && !session.selection.ok) lines.push(`session ${session.name}: ${session.selection.message}`);
  }
  return lines;
}

/**
 * What `pincer chat` and `pincer host` would do right now (without --provider): the provider each would run (the
 * chat's AGENT_PROVIDER, else its group's saved one; the host's default group for new conversations), decided as
 * their runners will decide.
 */
export function renderCommands(report: DoctorReport, env: NodeJS.ProcessEnv, chatGroup?: { provider: string }): string {
  const defaultGroup = settingOrDefault(env, 'PINCER_DEFAULT_GROUP');
  const group = report.groups.find((g) => g.name === defaultGroup);
  const groupPolicy = group?.policy ?? (rawSetting(env, 'AGENT_PROVIDER') || 'auto');
  return (
    [
      `pincer chat would run: ${describeChoice(chatSelection(rawSetting(env, 'AGENT_PROVIDER') || chatGroup?.provider || 'auto', env))}`,
      `pincer host would run: ${describeChoice(group?.runtime ? group.selection : hostSelection(groupPolicy, env))} (agent group ${defaultGroup}${group ? '' : ', created on first start'})`,
      '',
    ].join('\n') + '\n'
  );
}

/** How `pincer host` would start runners here (PINCER_RUNNER, `auto` by default), with the warning when unsandboxed. */
async function describeRunners(env: NodeJS.ProcessEnv): Promise<string> {
  const asked = rawSetting(env, 'PINCER_RUNNER') || 'auto';
  if (asked === 'kubernetes')
    return `runners: kubernetes (a pod per active session, image ${rawSetting(env, 'PINCER_K8S_IMAGE') ?? '(PINCER_K8S_IMAGE not set)'}; see docs/kubernetes.md)\n`;
  if (!['auto', 'process', 'docker', 'bwrap'].includes(asked)) return `runners: unknown PINCER_RUNNER "${asked}" (known: auto, process, docker, bwrap)\n`;
  const { kind, why } = await resolveRunnerKind({ kind: asked as 'auto', env });
  const limits = describeLimits(kind, env)
    .map((line) => `${line}\n`)
    .join('');
  return `runners: ${kind} (${why})${kind === 'process' ? `\nwarning: ${UNSANDBOXED_WARNING}` : ''}\n${limits}`;
}

/** How many runners the host would keep alive at once (PINCER_MAX_RUNNERS, else from the memory); `ok` false for a bad value. */
function describeAdmission(env: NodeJS.ProcessEnv): { line: string; ok: boolean } {
  try {
    return { line: `runners alive at once: ${runnerLimit(readSetting(env, 'PINCER_MAX_RUNNERS')).describe}`, ok: true };
  } catch (err) {
    return { line: `✗ runners alive at once: ${errorMessage(err)} (pincer host does not start with it)`, ok: false };
  }
}

/** doctor never runs extension code, so a runtime only an extension registers is unknown here. */
const EXTENSION_NOTE = '    (an extension of this package may register it: doctor lists extensions without running them)';

export function renderReport(report: DoctorReport, home: string | undefined, platformLines: string[] = []): string {
  const out: string[] = [];
  out.push('providers in this environment:');
  const width = Math.max(...report.probes.map((p) => p.name.length));
  for (const probe of report.probes) {
    const status = !probe.installed
      ? `not installed: ${probe.notInstalled}`
      : !probe.credentials
        ? `no credentials: ${probe.noCredentials}`
        : probe.auto && probe.autoCredentials === false
          ? 'ok if chosen; auto skips it in this environment'
          : 'ok';
    const auto = probe.auto ? '' : probe.name === 'mock' ? ' (auto picks it only in pincer chat, when nothing else is usable)' : ' (never chosen by auto)';
    out.push(`  ${probe.name.padEnd(width)}  ${status}${auto}`);
  }
  out.push('');
  for (const group of report.groups) {
    out.push(`agent group ${group.name} (${group.id}, ${group.dir})`);
    if (group.runtime) out.push(...describeRuntime(group.runtime));
    const { selection } = group;
    if (selection.ok) out.push(`  provider: ${selection.provider} — ${selection.reason}`);
    else if (group.chatOnly)
      out.push(
        `  ! pincer host could not start its agent: ${selection.message}`,
        '    (its sessions are pincer chat ones, which fall back to mock; a new conversation through pincer host would fail)',
      );
    else out.push(`  ✗ provider: ${selection.message}`);
    if (!selection.ok && selection.code === 'unknown' && group.resources.extensions.length > 0) out.push(EXTENSION_NOTE);
    out.push(`  ${describeResources(group.resources)}`);
    for (const diagnostic of group.resources.diagnostics) out.push(`  ! ${diagnostic.message}`);
    for (const server of group.mcpServers) {
      const { started } = server;
      const bad = server.problems.length > 0 || started?.ok === false;
      const how = started?.ok ? ` — starts, ${started.tools} tool${started.tools === 1 ? '' : 's'} (${(started.ms / 1000).toFixed(1)} s)` : '';
      out.push(`  ${bad ? '✗ ' : ''}MCP server ${server.name}: ${server.what}${how}`);
      for (const problem of server.problems) out.push(`    ! ${problem}`);
      if (started && !started.ok) out.push(`    ! does not start: ${started.error}`);
    }
    if (group.mcpServers.some((server) => server.problems.length === 0 && !server.started))
      out.push('  (MCP servers not started: pincer doctor --mcp-start starts each once, outside any sandbox)');
    out.push(`  sessions: ${group.sessions.length === 0 ? 'none yet' : group.sessions.map((s) => path.basename(s)).join(', ')}`);
  }
  if (report.groups.length > 0) out.push('');
  if (report.sessions.length === 0) out.push(`no sessions${home ? ` under ${path.join(home, 'sessions')}` : ''}`);
  for (const session of report.sessions) {
    out.push(`session ${session.name} (${session.dir})`);
    if (session.configError) {
      out.push(`  ✗ config: ${session.configError}`);
      continue;
    }
    const { selection, resources } = session;
    if (selection?.ok) out.push(`  provider: ${selection.provider} — ${selection.reason}${session.chat ? ' (a pincer chat session)' : ''}`);
    else if (selection) {
      out.push(`  ✗ provider: ${selection.message}`);
      if (session.chatFallbackNote) out.push('    (`pincer chat` sets PINCER_AUTO_FALLBACK=mock, so chat sessions run on mock)');
      if (selection.code === 'unknown' && resources && resources.extensions.length > 0) out.push(EXTENSION_NOTE);
    }
    if (session.model) out.push(`  model: ${session.model}`);
    if (resources) {
      out.push(`  ${describeResources(resources)}`);
      for (const diagnostic of resources.diagnostics) out.push(`  ! ${diagnostic.message}`);
    }
  }
  out.push('');
  if (platformLines.length > 0) out.push('chat platforms (docs/platforms.md):', ...platformLines, '');
  out.push(summary(report));
  return out.join('\n') + '\n';
}

/** The group's model-runtime generation: its number, a build that failed after it (the last good one keeps serving). */
function describeRuntime(view: GenerationView): string[] {
  const lines = [
    `  model runtime: ${view.generation === null ? 'no generation published' : `generation ${view.generation}, built ${view.builtAt}`}${view.stale ? ' (a newer one is being built)' : ''}; credentials: ${view.credentials.map((c) => `${c.name} (${c.source})`).join(', ') || 'none'}`,
  ];
  if (view.lastFailure)
    lines.push(
      `  ✗ model runtime: the last build failed at ${view.lastFailure.at}: ${view.lastFailure.error}${view.generation === null ? '' : ` (generation ${view.generation} keeps serving)`}`,
    );
  return lines;
}

function summary(report: DoctorReport): string {
  const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
  const groups = report.groups.filter((g) => !g.selection.ok && !g.chatOnly).length;
  const sessions = report.failures - groups;
  if (report.failures === 0) return report.groups.length > 0 ? 'all agent groups and sessions can start' : 'all sessions can start';
  return [groups ? count(groups, 'agent group') : '', sessions ? count(sessions, 'session') : ''].filter(Boolean).join(' and ') + ' cannot start';
}
