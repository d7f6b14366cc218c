import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { CentralStore } from './central-db/store.js';

/**
 * The agent group a `pincer chat` on `home` talks to, as saved in its central DB (read-only: a host may be running):
 * the group its terminal conversation is bound to, else the default group. Undefined when neither exists yet (the
 * first start creates the default group).
 */
export function savedChatGroup(home: string, defaultGroup: string | undefined): { name: string; provider: string; model: string | null } | undefined {
  const file = path.join(home, 'pincer.db');
  if (!fs.existsSync(file)) return undefined;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const store = new CentralStore(db, home);
    const binding = store.getBinding('terminal', 'local'); // the one conversation of `pincer chat`;
    const group = (binding && store.getAgentGroup(binding.agentGroupId)) || (defaultGroup ? store.findAgentGroup(defaultGroup) : undefined);
    return group && { name: group.name, provider: group.provider, model: group.model };
  } finally {
    db.close();
  }
}
