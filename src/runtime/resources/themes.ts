import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { describeIssues } from '../../db/content.js';
import type { ResourceDiagnostic, ThemeResource } from './types.js';

/**
 * Themes (a resource kind, like skills and prompts): JSON files in `themes/` (or the manifest's `"themes"` entries),
 * each a name and the colours of the places Pincer paints — the chat's agent, user, tool, notice and error lines, and
 * the web page's accent. A group picks one with `"pincer": {"theme": "<name>"}`; `light` and `dark` are built in and a
 * package's theme of the same name replaces them. A bad file is a diagnostic and is left out.
 */
const Colour = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'a colour is #rrggbb');

export const ThemeFileSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, 'a theme name is lower-case letters, digits, - and _ (at most 40)'),
  description: z.string().max(200).optional(),
  colours: z.strictObject({
    /** the agent's messages */
    agent: Colour,
    /** what the user typed, echoed */
    user: Colour,
    /** tool activity */
    tool: Colour,
    /** pincer's own notices */
    notice: Colour,
    error: Colour,
    /** the web page's accent (links, the selected conversation) */
    accent: Colour,
    background: Colour,
    text: Colour,
  }),
});

export const BUILTIN_THEMES: readonly ThemeResource[] = [
  {
    name: 'dark',
    description: 'light text on a dark background',
    file: '(built in)',
    colours: {
      agent: '#8be9fd',
      user: '#f8f8f2',
      tool: '#bd93f9',
      notice: '#6272a4',
      error: '#ff5555',
      accent: '#50fa7b',
      background: '#1e1f29',
      text: '#f8f8f2',
    },
  },
  {
    name: 'light',
    description: 'dark text on a light background',
    file: '(built in)',
    colours: {
      agent: '#005f87',
      user: '#1c1c1c',
      tool: '#5f00af',
      notice: '#6c6c6c',
      error: '#af0000',
      accent: '#0063c6',
      background: '#ffffff',
      text: '#1c1c1c',
    },
  },
];

/** The theme files at `target` (a folder's `*.json`, or one file). */
export function themesAt(target: string, diagnostics: ResourceDiagnostic[]): ThemeResource[] {
  let files: string[];
  try {
    files = fs.statSync(target).isDirectory()
      ? fs
          .readdirSync(target)
          .filter((name) => name.endsWith('.json'))
          .sort()
          .map((name) => path.join(target, name))
      : [target];
  } catch (err) {
    diagnostics.push({ code: 'unreadable', message: `themes: ${target}: ${err instanceof Error ? err.message : String(err)}` });
    return [];
  }
  if (files.length === 0) diagnostics.push({ code: 'empty-glob', message: `themes: ${target} holds no .json files` });
  const themes: ThemeResource[] = [];
  for (const file of files) {
    if (!file.endsWith('.json')) {
      diagnostics.push({ code: 'invalid-theme', message: `themes: ${file} is not a .json file` });
      continue;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (err) {
      diagnostics.push({ code: 'invalid-theme', message: `themes: ${file}: not JSON (${err instanceof Error ? err.message : String(err)})` });
      continue;
    }
    const parsed = ThemeFileSchema.safeParse(raw);
    if (!parsed.success) {
      diagnostics.push({ code: 'invalid-theme', message: `themes: ${file}: ${describeIssues(parsed.error)}` });
      continue;
    }
    themes.push({ ...parsed.data, file });
  }
  return themes;
}

/**
 * The theme a group uses: its `"theme"` (a package theme, else a built-in one), else `dark`. An unknown name is a
 * diagnostic and the default applies.
 */
export function chooseTheme(wanted: string | undefined, own: readonly ThemeResource[], diagnostics: ResourceDiagnostic[]): ThemeResource {
  const all = [...own, ...BUILTIN_THEMES.filter((b) => !own.some((t) => t.name === b.name))];
  if (wanted === undefined) return all.find((t) => t.name === 'dark')!;
  const found = all.find((t) => t.name === wanted);
  if (found) return found;
  diagnostics.push({
    code: 'invalid-theme',
    message: `theme "${wanted}" is not a theme of this package or a built-in one (known: ${all.map((t) => t.name).join(', ')}); using dark`,
  });
  return all.find((t) => t.name === 'dark')!;
}
