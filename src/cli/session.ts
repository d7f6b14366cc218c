import type { Command } from 'commander';
import { createSessionFolder } from '../db/layout.js';

export function registerSessionCommands(program: Command): void {
  const session = program.command('session').description('session folders');
  session
    .command('create <dir>')
    .description('create a session folder with an empty, schema-current session.db')
    .action((dir: string) => {
      const paths = createSessionFolder(dir);
      process.stdout.write(`${paths.root}\n`);
    });
}
