import type { Command } from 'commander';
import { resolveHome } from '../host/config.js';
import { prepareHome } from '../host/home.js';
import { SecretsStore } from '../host/secrets.js';
import { PincerError } from '../shared/errors.js';

/**
 * `pincer secret set|list|remove NAME`: the host's secrets store (`<home>/secrets.json`, 0600). A value is read from
 * stdin — never from the command line, which every local user can read in /proc — and never printed. A running host
 * picks up every change (a rotated provider key is used from the next upstream request).
 */
const HOME_HELP = 'data directory (default: PINCER_HOME, else ~/.pincer)';

export function registerSecretCommands(program: Command): void {
  const secret = program.command('secret').description("set, list and remove the host's secrets (provider keys and values configuration refers to)");

  secret
    .command('set <name>')
    .description('set a secret; its value is read from stdin (typed without echo on a terminal), never from the command line')
    .option('--home <dir>', HOME_HELP)
    .action(async (name: string, options: { home?: string }) => {
      const home = resolveHome(process.env, options.home);
      const store = new SecretsStore(home);
      store.read(); // a refused file stops here, before the user types the value
      const value = await readValue(name);
      prepareHome(home);
      const existed = store.names().includes(name);
      store.set(name, value);
      process.stderr.write(`secret ${name} ${existed ? 'replaced' : 'set'} in ${store.file}\n`);
    });

  secret
    .command('list')
    .description('list the names of the secrets (never their values)')
    .option('--home <dir>', HOME_HELP)
    .action((options: { home?: string }) => {
      const names = new SecretsStore(resolveHome(process.env, options.home)).names();
      if (names.length === 0) process.stderr.write('no secrets (pincer secret set NAME)\n');
      for (const name of names) process.stdout.write(`${name}\n`);
    });

  secret
    .command('remove <name>')
    .description('remove a secret')
    .option('--home <dir>', HOME_HELP)
    .action((name: string, options: { home?: string }) => {
      const store = new SecretsStore(resolveHome(process.env, options.home));
      if (!store.remove(name)) throw new PincerError('invalid-input', `no secret named "${name}" (pincer secret list)`);
      process.stderr.write(`secret ${name} removed\n`);
    });
}

/** The value from stdin: all of it (one trailing newline dropped) when piped, one line typed without echo on a terminal. */
async function readValue(name: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    const chunks: Buffer[] = [];
    for await (const chunk of stdin) chunks.push(chunk as Buffer);
    const value = Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
    if (value.length === 0) throw new PincerError('invalid-input', `no value on stdin for ${name} (e.g. printf %s "$KEY" | pincer secret set ${name})`);
    return value;
  }
  process.stderr.write(`value for ${name} (not shown): `);
  stdin.setRawMode(true);
  stdin.resume();
  try {
    return await new Promise<string>((resolve, reject) => {
      let value = '';
      const onData = (chunk: Buffer): void => {
        for (const char of chunk.toString('utf8')) {
          if (char === '\r' || char === '\n') {
            stdin.off('data', onData);
            process.stderr.write('\n');
            return value.length > 0 ? resolve(value) : reject(new PincerError('invalid-input', `no value typed for ${name}`));
          }
          if (char === '\u0003') {
            stdin.off('data', onData);
            process.stderr.write('\n');
            return reject(new PincerError('invalid-input', 'cancelled'));
          }
          if (char === '\u007f' || char === '\b') value = value.slice(0, -1);
          else value += char;
        }
      };
      stdin.on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
  }
}
