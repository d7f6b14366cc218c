/**
 * How the `pincer` command reports a problem: one line on stderr, `pincer: <what happened> (see pincer <cmd> --help)`,
 * and exit code 2 for anything the user can fix (a bad flag, a missing folder, bad configuration). A stack trace only
 * with PINCER_LOG_LEVEL=debug: a user who typed a wrong path should not read 19 lines of node internals.
 */
import { CommanderError, type Command } from 'commander';
import { cliReport } from '../shared/error-edges.js';
import { isPincerError, PincerError } from '../shared/errors.js';
import { errorMessage, isDebugLogging } from '../shared/log.js';

/** `pincer session create`, `pincer send`: the command's name as typed, for the hint. */
export function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

export function hintFor(command: Command | undefined): string {
  return `see ${command ? commandPath(command) : 'pincer'} --help`;
}

/**
 * Every command (and sub-command) reports commander's own errors — unknown option, missing argument, bad value — as one
 * line with a hint instead of commander's `error: …` and exits through `handleCliError`.
 */
export function configureErrorOutput(command: Command): void {
  command.exitOverride();
  command.configureOutput({
    outputError: (text, write) =>
      write(
        `pincer: ${text
          .trim()
          .replace(/^error: /, '')
          .replace(/\s*\n\s*/g, ' ')} (${hintFor(command)})\n`,
      ),
  });
  for (const sub of command.commands) configureErrorOutput(sub);
}

/**
 * The exit code for an error that ended a command, after writing what the user needs to see: the CLI edge of the
 * error vocabulary (`cliReport`). A failed file-system or database call is about the user's paths, so it is reported
 * like bad input.
 */
export function handleCliError(err: unknown, command: Command | undefined, stderr: NodeJS.WritableStream = process.stderr): number {
  if (err instanceof CommanderError) {
    // commander has already printed (help, the version, or the one-line error above)
    return err.exitCode === 0 ? 0 : 2;
  }
  const debug = isDebugLogging();
  const known = isPincerError(err) ? err : isSystemError(err) ? new PincerError('invalid-input', errorMessage(err), { cause: err }) : err;
  const report = cliReport(known, hintFor(command));
  stderr.write(`${report.line}${!isPincerError(known) && !debug ? ' (PINCER_LOG_LEVEL=debug shows the stack trace)' : ''}\n`);
  if (debug && err instanceof Error && err.stack) stderr.write(`${err.stack}\n`);
  return report.exit;
}

/** A failed file-system or database call (ENOENT, EACCES, SQLITE_CANTOPEN): about the user's paths, not a bug. */
function isSystemError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(E[A-Z]+|SQLITE_[A-Z_]+)$/.test(code);
}
