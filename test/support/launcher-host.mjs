// A stand-in host for lifeline tests: launches one runner through the compiled launchers and then just waits, so a
// test can SIGKILL it and watch what happens to its runner.
// argv[2]: JSON {kind, settings?, cliEntry, workspace, logFile, lockFile?, env?}.
const spec = JSON.parse(process.argv[2]);
const { BwrapLauncher, DockerLauncher, ProcessLauncher } = await import(new URL('../../dist/src/container/index.js', import.meta.url).href);
const launcher =
  spec.kind === 'docker'
    ? new DockerLauncher(spec.settings, spec.cliEntry)
    : spec.kind === 'bwrap'
      ? new BwrapLauncher(spec.settings, spec.cliEntry)
      : new ProcessLauncher(spec.cliEntry);
const runner = launcher.launch({
  workspace: spec.workspace,
  env: { PATH: process.env.PATH, AGENT_PROVIDER: 'mock', TZ: 'UTC', ...spec.env },
  logFile: spec.logFile,
  lockFile: spec.lockFile,
  name: spec.name,
});
process.stdout.write(`launched ${runner.child.pid}\n`);
setInterval(() => {}, 60_000);
