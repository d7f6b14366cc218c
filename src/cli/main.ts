import { Command } from 'commander';
import { registerChatCommand } from './chat.js';
import { registerHostCommand } from './host.js';
import { registerMessageCommands } from './messages.js';
import { registerSessionCommands } from './session.js';
import { runRunner } from '../runner/main.js';

/** `pincer …`: one command per process of SPEC §1, plus tools to poke at a session by hand. */
const program = new Command();
program.name('pincer').description('Pincer agent runner').showHelpAfterError();

program
  .command('runner')
  .description('run the agent runner for the session in PINCER_WORKSPACE (default /workspace)')
  .action(async () => {
    process.exitCode = await runRunner();
  });

registerSessionCommands(program);
registerMessageCommands(program);
registerChatCommand(program);
registerHostCommand(program);

await program.parseAsync(process.argv);
