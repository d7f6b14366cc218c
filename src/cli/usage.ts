import { InvalidArgumentError, type Command } from 'commander';
import fs from 'node:fs';
import path from 'node:path';
import { CentralStore, openCentralDb } from '../host/central-db/store.js';
import { loadHostConfig } from '../host/config.js';
import { isPincerError } from '../shared/errors.js';
import { BUDGET_PERIODS, BUDGET_UNITS, Budgets, type Budget } from '../host/usage/budgets.js';
import { UsageLedger } from '../host/usage/ledger.js';
import { PriceTable } from '../host/usage/prices.js';
import { formatUsageTable, usageReport, USAGE_GROUPINGS } from '../host/usage/report.js';
import { createLogger } from '../shared/log.js';

/**
 * `pincer usage` (what the agents cost, from the host's ledger) and `pincer budget` (limits per agent group). Both
 * read the central DB under the home directly, so they work whether or not a host is running.
 */
export function registerUsageCommands(program: Command): void {
  program
    .command('usage')
    .description('tokens and cost of agent turns from the usage ledger, grouped')
    .option('--since <when>', 'a duration back from now (30m, 24h, 7d, 2w) or a date (2026-11-01)', '7d')
    .option('--by <key>', `group rows by ${USAGE_GROUPINGS.join(' | ')}`, 'group')
    .option('--json', 'print the report as JSON (the same as GET /v1/usage)')
    .option('--home <dir>', 'data directory (default PINCER_HOME, else ~/.pincer)')
    .action((options: { since: string; by: string; json?: boolean; home?: string }) => {
      withCentral(options.home, (store) => {
        const report = usageReport(store.db, { since: options.since, by: options.by });
        process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatUsageTable(report)}\n`);
      });
    });

  const budget = program.command('budget').description('daily and monthly limits per agent group (tokens or USD)');
  budget
    .command('list')
    .description('show every budget and what was used against it')
    .option('--home <dir>', 'data directory (default PINCER_HOME, else ~/.pincer)')
    .action((options: { home?: string }) => {
      withCentral(options.home, (store, budgets) => {
        const rows = budgets.list();
        if (rows.length === 0) process.stdout.write('no budgets (set one with: pincer budget set <group> --daily-usd 5)\n');
        for (const row of rows) process.stdout.write(`${describe(store, row)}\n`);
      });
    });
  const set = budget
    .command('set <group>')
    .description('set or raise limits of an agent group (by name or id); 0 refuses every turn')
    .option('--home <dir>', 'data directory (default PINCER_HOME, else ~/.pincer)');
  for (const period of BUDGET_PERIODS)
    for (const unit of BUDGET_UNITS)
      set.option(`--${period}-${unit} <amount>`, `${period} limit in ${unit === 'usd' ? 'US dollars' : 'tokens (input + output)'}`, parseAmount);
  set.action((groupName: string, options: Record<string, number | string | undefined>) => {
    withCentral(options.home as string | undefined, (store, budgets) => {
      const group =
        store.findAgentGroup(groupName) ??
        fail(
          `no agent group "${groupName}" (known: ${
            store
              .listAgentGroups()
              .map((g) => g.name)
              .join(', ') || 'none'
          })`,
        );
      let changed = 0;
      for (const period of BUDGET_PERIODS) {
        for (const unit of BUDGET_UNITS) {
          const amount = options[`${period}${unit === 'usd' ? 'Usd' : 'Tokens'}`];
          if (typeof amount !== 'number') continue;
          budgets.set(group.id, period, unit, amount);
          changed += 1;
        }
      }
      if (changed === 0) fail('say which limit to set: --daily-usd, --monthly-usd, --daily-tokens or --monthly-tokens');
      for (const row of budgets.list(group.id)) process.stdout.write(`${describe(store, row)}\n`);
    });
  });
  budget
    .command('clear <group>')
    .description('remove the limits of an agent group')
    .option('--home <dir>', 'data directory (default PINCER_HOME, else ~/.pincer)')
    .action((groupName: string, options: { home?: string }) => {
      withCentral(options.home, (store, budgets) => {
        const group = store.findAgentGroup(groupName) ?? fail(`no agent group "${groupName}"`);
        process.stdout.write(`removed ${budgets.clear(group.id)} budget(s) of ${group.name}\n`);
      });
    });
}

function withCentral(home: string | undefined, fn: (store: CentralStore, budgets: Budgets) => void): void {
  let dir: string;
  try {
    dir = loadHostConfig(process.env, { home }).home;
  } catch (err) {
    fail(isPincerError(err) ? err.message : String(err));
  }
  const file = path.join(dir, 'pincer.db');
  if (!fs.existsSync(file)) fail(`no Pincer home at ${dir} (no pincer.db): pass --home or set PINCER_HOME`);
  const db = openCentralDb(file);
  try {
    const store = new CentralStore(db);
    fn(store, new Budgets(db, new UsageLedger(db, new PriceTable(), createLogger('usage'))));
  } catch (err) {
    if (!isPincerError(err)) throw err;
    fail(err.message);
  } finally {
    db.close();
  }
}

function describe(store: CentralStore, budget: Budget): string {
  const group = store.getAgentGroup(budget.agentGroupId);
  const amount = budget.unit === 'usd' ? `$${budget.amount.toFixed(2)}` : `${budget.amount.toLocaleString('en-US')} tokens`;
  return `${group?.name ?? budget.agentGroupId}: ${budget.period} ${amount}`;
}

function parseAmount(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('must be a number ≥ 0');
  return n;
}

function fail(message: string): never {
  process.stderr.write(`pincer: ${message}\n`);
  process.exit(2);
}
