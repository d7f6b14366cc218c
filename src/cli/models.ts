import type { Command } from 'commander';
import { resolveHome } from '../host/config.js';
import { currentViews } from '../host/generations/current-views.js';
import type { CatalogueModel, GenerationView } from '../host/generations/types.js';
import { PincerError } from '../shared/errors.js';

/**
 * `pincer models [--group NAME] [--all] [--json]`: each agent group's model catalogue — the models it can use now,
 * the runtime the selection rules choose for each, route, context window and prices, and why a model cannot be used.
 * With a host running on the home, what that host published; otherwise built now from this environment the way a
 * host would (and said so).
 */
export function registerModelsCommand(program: Command): void {
  program
    .command('models')
    .description("list each agent group's model catalogue as the host published it (models, runtimes, prices, why one is unavailable)")
    .option('--home <dir>', 'data directory (default: PINCER_HOME, else ~/.pincer)')
    .option('--group <name>', 'only this agent group (name or id)')
    .option('--all', 'also list the models that cannot be used now, with the reason')
    .option('--json', 'print the catalogue as JSON (what GET /v1/models answers)')
    .action((options: { home?: string; group?: string; all?: boolean; json?: boolean }) => {
      const home = resolveHome(process.env, options.home);
      const current = currentViews(home, process.env);
      let views = current.views;
      if (options.group) {
        views = views.filter((v) => v.group === options.group || v.groupId === options.group);
        if (views.length === 0) throw new PincerError('invalid-input', `no agent group "${options.group}" in ${home}`);
      }
      if (options.json) {
        process.stdout.write(`${JSON.stringify({ groups: views }, null, 2)}\n`);
        return;
      }
      if (views.length === 0) {
        process.stdout.write(`no agent groups in ${home} yet (the first pincer host or pincer chat creates one)\n`);
        return;
      }
      process.stdout.write(
        current.source.from === 'host'
          ? `published by the host running on ${home} (pid ${current.source.pid})\n`
          : `no host running on ${home}: built now from this environment\n`,
      );
      for (const view of views) process.stdout.write(renderView(view, options.all === true));
    });
}

export function renderView(view: GenerationView, all: boolean): string {
  const out: string[] = [''];
  const credentials = view.credentials.map((c) => `${c.name} (${c.source})`).join(', ') || 'none';
  out.push(
    `agent group ${view.group}: ${view.generation === null ? 'no generation published' : `generation ${view.generation}, built ${view.builtAt}`}${view.stale ? ' (a newer one is being built)' : ''}`,
  );
  if (view.lastFailure)
    out.push(
      `  ✗ last build failed at ${view.lastFailure.at}: ${view.lastFailure.error}${view.generation === null ? '' : ` (generation ${view.generation} keeps serving)`}`,
    );
  out.push(`  credentials: ${credentials}`);
  if (view.selection)
    out.push(view.selection.ok ? `  runtime: ${view.selection.provider} — ${view.selection.reason}` : `  ✗ runtime: ${view.selection.message}`);
  if (view.model) out.push(`  model: ${view.model}`);
  const shown = view.models.filter((m) => all || m.available || m.configured);
  const width = Math.max(0, ...shown.map((m) => m.ref.length));
  for (const model of shown) out.push(`  ${model.available ? '✓' : '✗'} ${model.ref.padEnd(width)}  ${describeModel(model)}`);
  const hidden = view.models.length - shown.length;
  if (hidden > 0) out.push(`  (${hidden} more cannot be used now: --all lists them with the reason)`);
  return `${out.join('\n')}\n`;
}

function describeModel(model: CatalogueModel): string {
  const parts: string[] = [];
  if (model.harness) parts.push(model.harness);
  if (model.api) parts.push(model.api);
  if (model.contextWindow) parts.push(`${Math.round(model.contextWindow / 1000)}k context`);
  if (model.price) parts.push(`$${model.price.input}/$${model.price.output} per Mtok`);
  if (model.configured) parts.push('configured');
  if (!model.available && model.unavailable) parts.push(model.unavailable);
  return parts.join(', ');
}
