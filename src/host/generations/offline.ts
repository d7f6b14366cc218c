import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../../shared/log.js';
import { CentralStore } from '../central-db/store.js';
import { SecretsStore } from '../secrets.js';
import { readCredentials } from './credentials.js';
import { declaredModels, declaresExtensions } from './extensions.js';
import { GenerationPublisher } from './publisher.js';
import type { GenerationView } from './types.js';

/**
 * The generations a host on `home` would publish under `env`, built now with the host's own builder — for
 * `pincer models` and `pincer doctor` when no host runs there (a running host's published files are read instead).
 * Reads the central DB read-only; writes nothing. Throws the secrets store's one-line error on a bad secrets file.
 */
export function buildViewsNow(home: string, env: NodeJS.ProcessEnv): GenerationView[] {
  const file = path.join(home, 'pincer.db');
  if (!fs.existsSync(file)) return [];
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const store = new CentralStore(db, home);
    const secrets = new SecretsStore(home);
    const publisher = new GenerationPublisher({
      readCredentials: (previous) => readCredentials({ ...env, AGENT_PROVIDER: undefined }, () => secrets.read(), previous),
      groups: () => store.listAgentGroups(),
      hasExtensions: (group) => declaresExtensions(path.join(home, 'groups', group.folder)),
      extensionModels: (group) => declaredModels(path.join(home, 'groups', group.folder)),
      // the build's own lines would repeat what the views say
      log: createLogger('models', () => undefined),
    });
    publisher.publishAllNow();
    return store.listAgentGroups().map((group) => publisher.view(group));
  } finally {
    db.close();
  }
}
