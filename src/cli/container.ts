import type { Command } from 'commander';

/**
 * `pincer container …`: build the runner image (Docker runners, PINCER_RUNNER=docker) and clear runner containers
 * left behind. Loaded only when chosen, like the other long commands.
 */
export function registerContainerCommands(program: Command): void {
  const container = program.command('container').description('runners in Docker containers');

  container
    .command('image')
    .description("build the runner image from this machine's own Node (no registry needed); does nothing if it is current")
    .option('--image <name>', 'image name (default PINCER_CONTAINER_IMAGE, else pincer-node)')
    .option('--force', 'rebuild even if the image is current')
    .option('--with <commands>', 'comma-separated host commands to copy in for the agent (e.g. ls,cat,grep)')
    .action(async (options: { image?: string; force?: boolean; with?: string }) =>
      reportErrors(async () => {
        const { ensureRunnerImage, loadLauncherConfig } = await import('../container/index.js');
        const { checkDockerDaemon } = await import('../container/docker-cli.js');
        const config = loadLauncherConfig(process.env);
        const { ContainerError } = await import('../container/errors.js');
        const { IMAGE_NAME } = await import('../container/config.js');
        if (options.image !== undefined && !IMAGE_NAME.test(options.image)) {
          throw new ContainerError('config', `bad image name "${options.image}" (lower case letters, digits, . _ - / :)`);
        }
        await checkDockerDaemon(config.docker.cliEnv);
        const result = await ensureRunnerImage({
          image: options.image ?? config.docker.image,
          cliEnv: config.docker.cliEnv,
          appRoot: config.docker.appRoot,
          tools: (options.with ?? '')
            .split(',')
            .map((name) => name.trim())
            .filter(Boolean),
          force: options.force,
        });
        process.stdout.write(`${JSON.stringify(result)}\n`);
      }),
    );

  container
    .command('clean')
    .description('remove every Pincer runner container on the daemon (running or not)')
    .action(async () =>
      reportErrors(async () => {
        const { listRunnerContainers, loadLauncherConfig, removeRunnerContainers } = await import('../container/index.js');
        const { cliEnv } = loadLauncherConfig(process.env).docker;
        const names = await listRunnerContainers(cliEnv);
        await removeRunnerContainers(names, cliEnv);
        process.stdout.write(`${JSON.stringify({ removed: names })}\n`);
      }),
    );
}

/** A `ContainerError` is one clear line and exit code 2; anything else is a bug and keeps its stack. */
async function reportErrors(action: () => Promise<void>): Promise<void> {
  const { isContainerError } = await import('../container/errors.js');
  try {
    await action();
  } catch (err) {
    if (!isContainerError(err)) throw err;
    process.stderr.write(`pincer: ${err.message}\n`);
    process.exitCode = 2;
  }
}
