import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../db/layout.js';
import type { GenerationView } from './types.js';

/**
 * The published catalogue for readers in other processes (`pincer models`, `pincer doctor`): one file per agent group,
 * `<home>/catalogue/<group id>.json`, the group's {@link GenerationView} — names of credentials and where they came
 * from, never a value. Written atomically after every publication, so a reader sees one whole generation.
 */
export const CATALOGUE_DIR = 'catalogue';

export function writePublishedView(home: string, view: GenerationView): void {
  const dir = path.join(home, CATALOGUE_DIR);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileAtomic(path.join(dir, `${view.groupId}.json`), `${JSON.stringify(view, null, 2)}\n`, 0o600);
}

/** The views the home's host published, by group name; empty when none was (no host ever ran here). */
export function readPublishedViews(home: string): GenerationView[] {
  const dir = path.join(home, CATALOGUE_DIR);
  let names: string[];
  try {
    names = fs.readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch {
    return []; // no folder: nothing published yet
  }
  const views: GenerationView[] = [];
  for (const name of names.sort()) {
    try {
      views.push(JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as GenerationView);
    } catch {
      // a file being replaced is renamed whole; one that is not JSON was not written by the host and is skipped
    }
  }
  return views.sort((a, b) => (a.group < b.group ? -1 : 1));
}
