import fs from 'node:fs';
import path from 'node:path';
import { errorMessage, type Logger } from '../../shared/log.js';
import { SECRETS_FILE } from '../secrets.js';

/** Changes closer together than this make one republication. */
const SETTLE_MS = 100;
/** The fallback check (a file system whose change events do not reach us: some network and container mounts). */
const POLL_MS = 2000;

export interface CredentialsWatch {
  close(): void;
}

/**
 * Watch the secrets store (`<home>/secrets.json`, replaced by a rename on every `pincer secret set`) and call
 * `changed` once per burst of changes. The home folder is watched, not the file, because a rename replaces the file
 * a watch on it would follow; a slow stat poll backs the events up.
 */
export function watchCredentials(home: string, log: Logger, changed: (why: string) => void): CredentialsWatch {
  const file = path.join(home, SECRETS_FILE);
  let timer: NodeJS.Timeout | null = null;
  const soon = (): void => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      changed('the secrets store changed');
    }, SETTLE_MS);
    timer.unref();
  };
  let watcher: fs.FSWatcher | undefined;
  try {
    watcher = fs.watch(home, { persistent: false }, (_event, name) => {
      if (name === SECRETS_FILE) soon();
    });
    watcher.on('error', (err) => log.warn(`model runtime: watching ${home} failed (${errorMessage(err)}); checking ${SECRETS_FILE} every ${POLL_MS} ms`));
  } catch (err) {
    log.warn(`model runtime: cannot watch ${home} (${errorMessage(err)}); checking ${SECRETS_FILE} every ${POLL_MS} ms`);
  }
  const poll = (current: fs.Stats, previous: fs.Stats): void => {
    if (current.ino !== previous.ino || current.mtimeMs !== previous.mtimeMs || current.size !== previous.size || current.mode !== previous.mode) soon();
  };
  fs.watchFile(file, { persistent: false, interval: POLL_MS }, poll);
  return {
    close: () => {
      watcher?.close();
      fs.unwatchFile(file, poll);
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}
