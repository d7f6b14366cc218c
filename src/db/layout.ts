import { randomUUID } from '../shared/uuid.js';
import fs from 'node:fs';
import path from 'node:path';
import { openSessionDb } from './connection.js';

/** The session folder (docs/architecture.md; mounted at /workspace in a container). */
export interface SessionPaths {
  root: string;
  db: string;
  /** the session's own writable folder: the agent's working directory, its notes and archives. */
  agent: string;
  /**
   * the agent group's folder, read-only to the session (a mount in a sandbox, a link into the home for a process
   * runner); absent when the folder is run without a host, and then `agent/` holds the definitions.
   */
  group: string;
  global: string;
  downloads: string;
  outbox: string;
  extra: string;
  config: string;
}

export function sessionPaths(root: string): SessionPaths {
  const abs = path.resolve(root);
  return {
    root: abs,
    db: path.join(abs, 'session.db'),
    agent: path.join(abs, 'agent'),
    group: path.join(abs, 'group'),
    global: path.join(abs, 'global'),
    downloads: path.join(abs, 'downloads'),
    outbox: path.join(abs, 'outbox'),
    extra: path.join(abs, 'extra'),
    config: path.join(abs, 'config.json'),
  };
}

/**
 * The folder the agent's definitions come from (CLAUDE.md, skills, prompts, extensions, runtime settings): the group's
 * folder when the session folder has one (the host gives every session one), else the session's own `agent/`.
 */
export function definitionsDir(paths: SessionPaths): string {
  return fs.statSync(paths.group, { throwIfNoEntry: false })?.isDirectory() ? paths.group : paths.agent;
}

/** Create the folder layout and an empty, schema-current session.db. Safe to call on an existing session. */
export function createSessionFolder(root: string): SessionPaths {
  const paths = sessionPaths(root);
  for (const dir of [paths.root, paths.agent, paths.global, paths.downloads, paths.outbox, paths.extra]) {
    fs.mkdirSync(dir, { recursive: true });
  }
  openSessionDb(paths.db, { create: true }).close();
  return paths;
}

/** Write JSON atomically (temp file + rename), so a reader never sees half a file. */
export function writeJsonAtomic(file: string, value: unknown): void {
  writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n');
}

/**
 * Write a file atomically: a fresh temp file beside it (random name, created exclusively, so a link planted under a
 * guessable name is never written through), flushed, then renamed over `file` (a rename replaces a link, never
 * follows it). A crash leaves the old file or the new one, never an empty or half one.
 */
export function writeFileAtomic(file: string, data: string, mode = 0o644): void {
  const tmp = `${file}.${randomUUID().slice(0, 12)}.tmp`;
  const fd = fs.openSync(tmp, 'wx', mode);
  try {
    fs.writeFileSync(fd, data);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, file);
}
