import { Command } from 'commander';
import fs from 'node:fs';
import { registerChatCommand } from './chat.js';
import { registerDoctorCommand } from './doctor.js';
import { configureErrorOutput, handleCliError } from './errors.js';
import { registerContainerCommands } from './container.js';
import { registerHostCommand } from './host.js';
import { registerMessageCommands } from './messages.js';
import { registerSessionCommands } from './session.js';
import { registerSessionServeCommand } from './session-serve.js';
import { registerAccessCommands } from './access.js';
import { registerUsageCommands } from './usage.js';
import { registerMcpServerCommands } from './mcp-servers.js';
import { registerSecretCommands } from './secret.js';
import { registerModelsCommand } from './models.js';
import { registerProviderCommands } from './provider.js';

/**
 * `pincer …`: one command per process (host, runner, MCP tool server), plus tools to poke at a session by hand. The long-running processes
 * load their code only when chosen: a runner does not carry the MCP SDK, and `pincer mcp` (started by the provider
 * for every query) does not load the runner and its providers.
 */
const program = new Command();
program
  .name('pincer')
  .description('Pincer runs AI agents for chats, scheduled tasks and webhooks. Start with: pincer chat')
  .version(packageVersion(), '-V, --version', 'print the version');

program
  .command('runner')
  .description('run the agent runner for the session in PINCER_WORKSPACE (default /workspace)')
  .action(async () => {
    const { runRunner } = await import('../runner/main.js');
    process.exitCode = await runRunner();
  });

program
  .command('mcp')
  .description('the Pincer MCP tool server on stdio for the session in PINCER_WORKSPACE (started by the provider)')
  .action(async () => {
    const { runMcpServer } = await import('../mcp/main.js');
    process.exitCode = await runMcpServer();
  });

registerSessionCommands(program);
registerSessionServeCommand(program);
registerMessageCommands(program);
registerChatCommand(program);
registerDoctorCommand(program);
registerHostCommand(program);
registerContainerCommands(program);
registerAccessCommands(program);
registerUsageCommands(program);
registerMcpServerCommands(program);
registerSecretCommands(program);
registerModelsCommand(program);
registerProviderCommands(program);

configureErrorOutput(program);
// The command whose action is running, for the hint of an error it throws.
let running: Command | undefined;
program.hook('preAction', (_program, action) => {
  running = action;
});
try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.exitCode = handleCliError(err, running);
}

function packageVersion(): string {
  const file = new URL('../../../package.json', import.meta.url);
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}
