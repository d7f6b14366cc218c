import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { onPath } from './support/dockerd.js';
import { PROCESS_RUNNER, startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import type { Recorded } from './support/mock-record.js';
import { waitFor } from './support/wait.js';

/**
 * On a real host: what one conversation's agent writes where it works (its `agent/CLAUDE.md`) or
 * into the group's folder never reaches another conversation of the same agent group. Conversation A's task script
 * (run in A's sandbox, in A's working folder) is the attacker; conversation B's system prompt is what it aims at.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

const bwrapSkip = onPath('bwrap') ? undefined : 'bubblewrap is not installed (.ci/run installs it as root)';
if (bwrapSkip) console.warn(`[group-folder] skipping the bubblewrap case: ${bwrapSkip}`);

/** The script of A's task: it writes its own notes, then tries the group's folder by both of its paths. */
const ATTACK = [
  'echo "A-OWN-NOTE" >> CLAUDE.md',
  '(echo "A-GROUP-WRITE" >> ../group/CLAUDE.md) 2>/dev/null && echo writable > group-write.txt || echo refused > group-write.txt',
  '(echo "A-NEW-SKILL" > ../group/planted.md) 2>/dev/null || true',
  'echo \'{"wakeAgent":false}\'',
].join('; ');

async function runTask(host: HostHandle, conversation: string, script: string): Promise<{ row: InboundRow; sessionId: string }> {
  const task = await host.request('POST', `/v1/conversations/${conversation}/tasks`, { prompt: 'p', processAfter: new Date().toISOString(), script });
  expect(task.status).toBe(202);
  const sessionId = task.body.sessionId as string;
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
  try {
    const row = await waitFor(
      'the task to end',
      () => {
        const r = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(task.body.id) as InboundRow | undefined;
        return r && (r.status === 'completed' || r.status === 'failed') ? r : undefined;
      },
      { timeoutMs: 90_000 },
    );
    return { row, sessionId };
  } finally {
    db.close();
  }
}

/** The system prompts of the queries recorded in `file` whose prompt has `text`. */
function systemPrompts(file: string, text: string): string[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Recorded)
    .filter((entry) => entry.type === 'query' && JSON.stringify(entry.prompt).includes(text))
    .map((entry) => entry.systemPrompt ?? '');
}

describe('point 12: the group folder is read-only to sessions; each session writes only its own agent/', { timeout: 180_000 }, () => {
  it.each([
    // the sandbox enforces it: the group's folder is a read-only bind
    ['bubblewrap', { PINCER_RUNNER: 'bwrap', MOCK_RECORD_FILE: '/workspace/mock-record.jsonl' }, true, bwrapSkip],
    // a plain process cannot be stopped from writing the folder's link; what it writes where it works stays its own
    ['a plain process', { ...PROCESS_RUNNER, PINCER_UNSANDBOXED_SCRIPTS: '1' }, false, undefined],
  ] as const)('in %s', async (_kind, given, enforced, skip) => {
    if (skip) return;
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    // a process runner's record file is a host path, one for the whole host: B's entries are told by B's prompt
    const shared = path.join(home, 'mock-record.jsonl');
    const env: Record<string, string> = { MOCK_RECORD_FILE: shared, ...given };
    const host = await startHost(env, home);
    const record = (sessionId: string): string => (env.PINCER_RUNNER === 'bwrap' ? path.join(host.sessionDir(sessionId), 'mock-record.jsonl') : shared);
    const [groupName] = fs.readdirSync(path.join(host.home, 'groups'));
    const groupDir = path.join(host.home, 'groups', groupName!);
    fs.writeFileSync(path.join(groupDir, 'CLAUDE.md'), 'GROUP-RULES\n');

    const a = await runTask(host, 'conv-a', ATTACK);
    expect(a.row.status, a.row.last_error ?? '').toBe('completed');
    const aDir = host.sessionDir(a.sessionId);
    // A's notes are in A's own folder, not the group's
    expect(fs.lstatSync(path.join(aDir, 'agent')).isDirectory()).toBe(true);
    expect(fs.readFileSync(path.join(aDir, 'agent', 'CLAUDE.md'), 'utf8')).toBe('A-OWN-NOTE\n');
    if (enforced) {
      expect(fs.readFileSync(path.join(aDir, 'agent', 'group-write.txt'), 'utf8')).toBe('refused\n');
      expect(fs.readFileSync(path.join(groupDir, 'CLAUDE.md'), 'utf8')).toBe('GROUP-RULES\n');
      expect(fs.existsSync(path.join(groupDir, 'planted.md'))).toBe(false);
    } else {
      // not enforced by the OS in this mode (docs/security.md says so): put the group's folder back for B
      fs.writeFileSync(path.join(groupDir, 'CLAUDE.md'), 'GROUP-RULES\n');
    }

    // B: a conversation of the same group, its first message after A's writes
    const b = host.stream('conv-b');
    const sent = await host.request('POST', '/v1/conversations/conv-b/messages', { text: 'hello from b' });
    expect(sent.status).toBe(202);
    const bSession = sent.body.sessionId as string;
    await b.waitFor('B’s reply', (e) => e.event === 'chat', 90_000);
    const prompts = await waitFor('B’s recorded query', () => {
      const found = systemPrompts(record(bSession), 'hello from b');
      return found.length > 0 ? found : undefined;
    });
    expect(prompts[0]).toContain('GROUP-RULES');
    expect(prompts[0]).not.toContain('A-OWN-NOTE');
    expect(prompts[0]).not.toContain('A-GROUP-WRITE');
    expect(fs.existsSync(path.join(host.sessionDir(bSession), 'agent', 'CLAUDE.md'))).toBe(false);
    b.close();
    expect(await host.stop()).toBe(0);
  });
});
