import type { Command } from 'commander';
import path from 'node:path';
import { describePlatforms } from '../host/platforms/catalog.js';
import { describeResources } from '../runtime/resources/prompt-commands.js';
import { runDoctor, sessionFoldersUnder, type DoctorReport } from '../doctor/report.js';

/**
 * `pincer doctor`: which provider each session's runner would start with and why, whether its binary and key are
 * there, and what its agent group's resource package loads (with every problem). Exit 1 when a session cannot start.
 */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('check providers, provider selection, resource packages of each session, and chat platforms')
    .option('--home <dir>', 'data directory whose sessions/* to check (default: $PINCER_HOME, else ./.pincer)')
    .option('--workspace <dir...>', 'check these session folders instead')
    .action((options: { home?: string; workspace?: string[] }) => {
      const home = path.resolve(options.home ?? process.env.PINCER_HOME ?? '.pincer');
      const dirs = options.workspace?.map((dir) => path.resolve(dir)) ?? sessionFoldersUnder(home);
      const report = runDoctor(dirs, process.env, options.workspace ? undefined : home);
      const platforms = describePlatforms(process.env);
      process.stdout.write(renderReport(report, options.workspace ? undefined : home, platforms.lines));
      process.exitCode = report.failures > 0 || platforms.incomplete > 0 ? 1 : 0;
    });
}

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
    out.push(`  ${probe.name.padEnd(width)}  ${status}${probe.auto ? '' : ' (never chosen by auto)'}`);
  }
  out.push('');
  for (const group of report.groups) {
    out.push(`agent group ${group.name} (${group.id}, ${group.dir})`);
    const { selection } = group;
    out.push(selection.ok ? `  provider: ${selection.provider} — ${selection.reason}` : `  ✗ provider: ${selection.message}`);
    out.push(`  ${describeResources(group.resources)}`);
    for (const diagnostic of group.resources.diagnostics) out.push(`  ! ${diagnostic.message}`);
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
    if (selection?.ok) out.push(`  provider: ${selection.provider} — ${selection.reason}`);
    else if (selection) {
      out.push(`  ✗ provider: ${selection.message}`);
      if (session.chatFallbackNote) out.push('    (`pincer chat` sets PINCER_AUTO_FALLBACK=mock, so chat sessions run on mock)');
    }
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

function summary(report: DoctorReport): string {
  const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
  const groups = report.groups.filter((g) => !g.selection.ok).length;
  const sessions = report.failures - groups;
  if (report.failures === 0) return report.groups.length > 0 ? 'all agent groups and sessions can start' : 'all sessions can start';
  return [groups ? count(groups, 'agent group') : '', sessions ? count(sessions, 'session') : ''].filter(Boolean).join(' and ') + ' cannot start';
}
