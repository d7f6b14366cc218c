import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { writeFileAtomic } from '../db/layout.js';
import { PincerError } from '../shared/errors.js';

/**
 * The HTTP channel's bearer token file (`<home>/http-token`). Whoever holds the token can run task scripts on the host,
 * so it is 32 random bytes, written atomically with mode 0600 (a full disk leaves no file rather than an empty one),
 * and a file that is empty, short or unreadable stops the host instead of turning authentication off.
 */
export const MIN_TOKEN_LENGTH = 32;

/** The token in `file`, created when absent. Throws `PincerError('config')` saying what to do when it is unusable. */
export function loadOrCreateToken(file: string, log: { info(message: string): void }): string {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
      throw new PincerError(
        'config',
        `cannot read the HTTP token file ${file} (${(err as NodeJS.ErrnoException).code}): fix its permissions, or delete it to have a new token generated`,
      );
    }
    const token = randomBytes(32).toString('base64url');
    writeFileAtomic(file, `${token}\n`, 0o600);
    log.info(`http token created in ${file}`);
    return token;
  }
  const token = text.trim();
  if (token.length < MIN_TOKEN_LENGTH) {
    throw new PincerError(
      'config',
      `the HTTP token file ${file} is ${token.length === 0 ? 'empty' : `too short (${token.length} characters)`}: delete it to have a new token generated, or write a token of at least ${MIN_TOKEN_LENGTH} characters into it`,
    );
  }
  fs.chmodSync(file, 0o600);
  return token;
}
