import { z } from 'zod';

/**
 * What a launcher hands its runner on stdin, before the pipe becomes the runner's lifeline: one JSON line with the
 * values of the secrets the session's MCP servers refer to. Not the environment (a sandbox's environment is on
 * bwrap's command line, and every process the agent starts inherits it), not `config.json` (the agent's folder): the
 * values live only in the runner's memory and in the environment of the server that asked for them.
 */

/** Set to `1` when the first line of the runner's stdin is the launch document. */
export const STDIN_DOCUMENT_ENV = 'PINCER_STDIN_DOCUMENT';

export const StdinDocumentSchema = z.strictObject({
  /** secret name → value, only those the session's configuration refers to */
  secrets: z.record(z.string(), z.string()),
  /**
   * a spare runner's (PINCER_SPARE=1) whole environment, the one it would have been started with: it was started
   * before its session was known, and takes its session, settings and provider from here.
   */
  env: z.record(z.string(), z.string()).optional(),
  /** a spare runner's launch lock (src/container/handle.ts): the lock file, and flock(1) to take it with. */
  lock: z.strictObject({ file: z.string(), flock: z.string() }).optional(),
});
export type StdinDocument = z.infer<typeof StdinDocumentSchema>;

/** The line to write (with its newline). */
export function stdinDocumentLine(document: StdinDocument): string {
  return `${JSON.stringify(document)}\n`;
}

/** The largest document a runner reads (a few secrets; anything bigger is a mistake). */
export const MAX_STDIN_DOCUMENT_BYTES = 1024 * 1024;
