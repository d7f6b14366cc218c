import type { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { openCentralDb } from '../host/central-db/store.js';
import { AccessStore } from '../host/channels/http/access.js';
import { DEFAULT_HMAC_HEADER, DEFAULT_TOLERANCE_S, WEBHOOK_SCHEMES, type WebhookScheme } from '../host/channels/http/signatures.js';
import { resolveHome } from '../host/config.js';
import { prepareHome } from '../host/home.js';
import { PincerError } from '../shared/errors.js';

/**
 * Who may call the HTTP API, kept in the home's central DB; a running host sees every change at the next request.
 * - `pincer token create|list|revoke`: tokens besides the admin token of `<home>/http-token`, each either `--admin` or
 *   limited to the `--conversation`s named (a bridge for one chat cannot read the others), stored hashed.
 * - `pincer webhook add|list|remove`: signed webhooks, whose senders prove themselves with an HMAC signature made
 *   with a shared secret instead of a token (GitHub, a generic HMAC-SHA256 header, Stripe-style timestamped).
 */
const home = (options: { home?: string }) => resolveHome(process.env, options.home);
const HOME_HELP = 'data directory (default: PINCER_HOME, else ~/.pincer)';

export function registerAccessCommands(program: Command): void {
  registerTokenCommands(program);
  registerWebhookCommands(program);
}

function registerTokenCommands(program: Command): void {
  const token = program.command('token').description('create, list and revoke tokens of the HTTP API (docs/http-api.md)');

  token
    .command('create <name>')
    .description('create a token and print it (only this once) on stdout')
    .option('--conversation <id>', 'a conversation the token may use (repeat for more)', (v: string, all: string[]) => [...all, v], [] as string[])
    .option('--admin', 'the token may use every route and conversation')
    .option('--home <dir>', HOME_HELP)
    .action((name: string, options: { conversation: string[]; admin?: boolean; home?: string }) => {
      withStore(home(options), true, (store) => {
        const { token: secret, info } = store.createToken({ name, admin: options.admin === true, conversations: options.conversation });
        process.stderr.write(`token "${info.name}" created for ${describeScope(info)}; it is shown only now:\n`);
        process.stdout.write(`${secret}\n`);
      });
    });

  token
    .command('list')
    .description('list tokens (names and scopes; the tokens themselves are not kept)')
    .option('--home <dir>', HOME_HELP)
    .action((options: { home?: string }) => {
      withStore(home(options), false, (store) => {
        const tokens = store.listTokens();
        if (tokens.length === 0) process.stdout.write('no tokens (besides the admin token in <home>/http-token)\n');
        for (const t of tokens) {
          process.stdout.write(`${t.name}\t${describeScope(t)}\tcreated ${t.createdAt}${t.revokedAt ? `\trevoked ${t.revokedAt}` : ''}\n`);
        }
      });
    });

  token
    .command('revoke <name>')
    .description('revoke a token at once (its browser sessions end too)')
    .option('--home <dir>', HOME_HELP)
    .action((name: string, options: { home?: string }) => {
      withStore(home(options), false, (store) => {
        if (!store.revokeToken(name)) throw new PincerError('invalid-input', `no live token named "${name}" (pincer token list)`);
        process.stderr.write(`token "${name}" revoked\n`);
      });
    });
}

function registerWebhookCommands(program: Command): void {
  const webhook = program.command('webhook').description('configure signed webhooks of the HTTP API (docs/http-api.md)');

  webhook
    .command('add <name>')
    .description('accept POST /v1/webhooks/<name> signed with a shared secret, without a token (replaces one of that name)')
    .requiredOption('--scheme <scheme>', `how the sender signs: ${WEBHOOK_SCHEMES.join(' | ')}`)
    .option('--secret <secret>', 'the shared secret (default: a new one, printed on stdout)')
    .option('--conversation <id>', 'the conversation its events go to (default webhook-<name>)')
    .option('--header <name>', `hmac scheme: the header with the signature (default ${DEFAULT_HMAC_HEADER})`)
    .option('--tolerance <seconds>', `stripe scheme: how old a signature may be (default ${DEFAULT_TOLERANCE_S})`)
    .option('--home <dir>', HOME_HELP)
    .action((name: string, options: { scheme: string; secret?: string; conversation?: string; header?: string; tolerance?: string; home?: string }) => {
      withStore(home(options), true, (store) => {
        const tolerance = options.tolerance === undefined ? null : Number(options.tolerance);
        if (tolerance !== null && !(Number.isInteger(tolerance) && tolerance > 0))
          throw new PincerError('invalid-input', `--tolerance: not a number of seconds: "${options.tolerance}"`);
        if (options.header !== undefined && options.scheme !== 'hmac') throw new PincerError('invalid-input', '--header is for --scheme hmac only');
        if (options.tolerance !== undefined && options.scheme !== 'stripe') throw new PincerError('invalid-input', '--tolerance is for --scheme stripe only');
        const secret = options.secret ?? randomBytes(24).toString('hex');
        const hook = store.setWebhook({
          name,
          scheme: options.scheme as WebhookScheme,
          secret,
          conversation: options.conversation ?? null,
          header: options.header ?? null,
          toleranceS: tolerance,
        });
        process.stderr.write(`webhook "${hook.name}" (${hook.scheme}) posts to conversation ${hook.conversation ?? `webhook-${hook.name}`}\n`);
        if (!options.secret) process.stdout.write(`${secret}\n`);
      });
    });

  webhook
    .command('list')
    .description('list signed webhooks (not their secrets)')
    .option('--home <dir>', HOME_HELP)
    .action((options: { home?: string }) => {
      withStore(home(options), false, (store) => {
        const hooks = store.listWebhooks();
        if (hooks.length === 0) process.stdout.write('no signed webhooks\n');
        for (const h of hooks) process.stdout.write(`${h.name}\t${h.scheme}\tconversation ${h.conversation ?? `webhook-${h.name}`}\n`);
      });
    });

  webhook
    .command('remove <name>')
    .description('stop accepting a signed webhook (its source then needs a token again)')
    .option('--home <dir>', HOME_HELP)
    .action((name: string, options: { home?: string }) => {
      withStore(home(options), false, (store) => {
        if (!store.removeWebhook(name)) throw new PincerError('invalid-input', `no signed webhook named "${name}" (pincer webhook list)`);
        process.stderr.write(`webhook "${name}" removed\n`);
      });
    });
}

/** Run against the home's central DB (created when `create`); errors go to the CLI's one-line report, exit 2. */
function withStore(home: string, create: boolean, run: (store: AccessStore) => void): void {
  if (!create && !fs.existsSync(path.join(home, 'pincer.db')))
    throw new PincerError('invalid-input', `no Pincer home at ${home} (no pincer.db); pass --home or PINCER_HOME`);
  prepareHome(home);
  const db = openCentralDb(path.join(home, 'pincer.db'));
  try {
    run(new AccessStore(db));
  } finally {
    db.close();
  }
}

function describeScope(t: { admin: boolean; conversations: string[] }): string {
  return t.admin ? 'every conversation (admin)' : `conversations ${t.conversations.join(', ')}`;
}
