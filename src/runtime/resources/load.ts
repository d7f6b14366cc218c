import fs from 'node:fs';
import path from 'node:path';
import { expandEntries } from './entries.js';
import { readManifest } from './manifest.js';
import { firstParagraph, parseMarkdownFile } from './markdown.js';
import { chooseTheme, themesAt } from './themes.js';
import type { ExtensionResource, LoadedResources, PromptResource, ResourceDiagnostic, ResourceSource, SkillResource } from './types.js';

/**
 * Load an agent group folder's skills and prompts (see types.ts). A kind the manifest lists comes only from its
 * entries; a kind it does not list falls back to its conventional folder.
 * `reservedCommands` (runner and provider commands, without `/`) cannot be taken by a prompt.
 */
export function loadResources(root: string, reservedCommands: readonly string[] = []): LoadedResources {
  const diagnostics: ResourceDiagnostic[] = [];
  const manifest = readManifest(root, diagnostics);

  let skillSource: ResourceSource = 'none';
  let skillPaths: string[] = [];
  if (manifest?.skills) {
    skillSource = 'manifest';
    skillPaths = expandEntries(root, manifest.skills, 'skills', diagnostics);
  } else if (isDirectory(path.join(root, 'skills'))) {
    skillSource = 'convention';
    skillPaths = [path.join(root, 'skills')];
  }

  let promptSource: ResourceSource = 'none';
  let promptPaths: string[] = [];
  if (manifest?.prompts) {
    promptSource = 'manifest';
    promptPaths = expandEntries(root, manifest.prompts, 'prompts', diagnostics);
  } else if (isDirectory(path.join(root, 'prompts'))) {
    promptSource = 'convention';
    promptPaths = [path.join(root, 'prompts')];
  }

  let themeSource: ResourceSource = 'none';
  let themePaths: string[] = [];
  if (manifest?.themes) {
    themeSource = 'manifest';
    themePaths = expandEntries(root, manifest.themes, 'themes', diagnostics);
  } else if (isDirectory(path.join(root, 'themes'))) {
    themeSource = 'convention';
    themePaths = [path.join(root, 'themes')];
  }
  const themes = uniqueByName(
    themePaths.flatMap((p) => themesAt(p, diagnostics)),
    'theme',
    diagnostics,
  );

  const extensions = extensionsIn(root, manifest?.extensions, diagnostics);
  return {
    root,
    sources: { skills: skillSource, prompts: promptSource, extensions: extensions.source, themes: themeSource },
    themes,
    theme: chooseTheme(manifest?.theme, themes, diagnostics),
    extensions: extensions.found,
    skills: uniqueByName(
      skillPaths.flatMap((p) => skillsAt(p, diagnostics)),
      'skill',
      diagnostics,
    ),
    prompts: uniqueByName(
      promptPaths.flatMap((p) => promptsAt(p, diagnostics)),
      'prompt',
      diagnostics,
      reservedCommands.map((c) => c.replace(/^\//, '').toLowerCase()),
    ),
    diagnostics,
  };
}

/**
 * The extension modules of an agent group folder, without loading them (the runner does, before choosing its
 * runtime: an extension may register a harness). Manifest entries, else `extensions/*.js|mjs` and
 * `extensions/<name>/index.js|mjs`. Only JavaScript: Node runs no TypeScript here.
 */
export function findExtensions(root: string): { found: ExtensionResource[]; source: ResourceSource; diagnostics: ResourceDiagnostic[] } {
  const diagnostics: ResourceDiagnostic[] = [];
  const manifest = readManifest(root, []);
  return { ...extensionsIn(root, manifest?.extensions, diagnostics), diagnostics };
}

function extensionsIn(root: string, entries: string[] | undefined, diagnostics: ResourceDiagnostic[]): { found: ExtensionResource[]; source: ResourceSource } {
  let source: ResourceSource = 'none';
  let files: string[] = [];
  if (entries) {
    source = 'manifest';
    files = expandEntries(root, entries, 'extensions', diagnostics).flatMap((target) => (isDirectory(target) ? extensionFilesIn(target) : [target]));
  } else if (isDirectory(path.join(root, 'extensions'))) {
    source = 'convention';
    files = extensionFilesIn(path.join(root, 'extensions'));
  }
  const found: ExtensionResource[] = [];
  for (const file of files) {
    if (!/\.(m?js|cjs)$/.test(file)) {
      diagnostics.push({ code: 'not-javascript', message: `extensions: ${file} is not JavaScript (.js, .mjs or .cjs); compile it first` });
      continue;
    }
    const base = path.basename(file);
    found.push({ name: /^index\.m?js$/.test(base) ? path.basename(path.dirname(file)) : base, file });
  }
  return { found, source };
}

/** `*.js`/`*.mjs` files of a folder, and `<name>/index.js|mjs` of its subfolders; other code files are reported. */
function extensionFilesIn(dir: string): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (isDirectory(full)) {
      const index = ['index.mjs', 'index.js'].map((f) => path.join(full, f)).find((f) => fs.existsSync(f));
      if (index) out.push(index);
    } else if (/\.(m?js|ts|mts|cjs)$/.test(name)) {
      out.push(full);
    }
  }
  return out;
}

/** A skill folder (with SKILL.md), a folder of skill folders, a SKILL.md, or a single-file skill (`name.md`). */
function skillsAt(target: string, diagnostics: ResourceDiagnostic[]): SkillResource[] {
  if (isDirectory(target)) {
    const own = path.join(target, 'SKILL.md');
    if (fs.existsSync(own)) return optional(readSkill(own, path.basename(target), diagnostics));
    const children = fs
      .readdirSync(target)
      .sort()
      .map((name) => path.join(target, name))
      .filter(isDirectory);
    const skills: SkillResource[] = [];
    for (const child of children) {
      const file = path.join(child, 'SKILL.md');
      if (fs.existsSync(file)) skills.push(...optional(readSkill(file, path.basename(child), diagnostics)));
      else diagnostics.push({ code: 'no-skill-file', message: `skills: ${child} has no SKILL.md` });
    }
    if (children.length === 0) diagnostics.push({ code: 'no-skill-file', message: `skills: ${target} holds no skill folders` });
    return skills;
  }
  const fallbackName = path.basename(target) === 'SKILL.md' ? path.basename(path.dirname(target)) : path.basename(target, path.extname(target));
  return optional(readSkill(target, fallbackName, diagnostics));
}

function readSkill(file: string, fallbackName: string, diagnostics: ResourceDiagnostic[]): SkillResource | undefined {
  const text = readText(file, diagnostics);
  if (text === undefined) return undefined;
  const { attributes, body } = parseMarkdownFile(text);
  const name = attributes.name || fallbackName;
  const description = attributes.description || firstParagraph(body) || '(no description)';
  return { name, description, file, dir: path.dirname(file) };
}

/** A folder's `*.md` files, or one file. */
function promptsAt(target: string, diagnostics: ResourceDiagnostic[]): PromptResource[] {
  const files = isDirectory(target)
    ? fs
        .readdirSync(target)
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => path.join(target, name))
    : [target];
  if (files.length === 0) diagnostics.push({ code: 'empty-glob', message: `prompts: ${target} holds no .md files` });
  const prompts: PromptResource[] = [];
  for (const file of files) {
    const name = path.basename(file, path.extname(file)).toLowerCase();
    if (!/^[a-z0-9][a-z0-9_-]*$/.test(name)) {
      diagnostics.push({ code: 'invalid-name', message: `prompts: ${file}: "${name}" is not a usable command name (letters, digits, - and _)` });
      continue;
    }
    const text = readText(file, diagnostics);
    if (text === undefined) continue;
    const { attributes, body } = parseMarkdownFile(text);
    prompts.push({ name, description: attributes.description, template: body, file });
  }
  return prompts;
}

/** Keep the first of each name; report the others (and reserved names) as collisions. */
function uniqueByName<T extends { name: string; file: string }>(items: T[], kind: string, diagnostics: ResourceDiagnostic[], reserved: string[] = []): T[] {
  const kept = new Map<string, T>();
  for (const item of items) {
    const first = kept.get(item.name);
    if (reserved.includes(item.name)) {
      diagnostics.push({ code: 'name-collision', message: `${kind} "${item.name}" (${item.file}) collides with the command /${item.name}; ignored` });
    } else if (first) {
      if (first.file !== item.file) {
        diagnostics.push({ code: 'name-collision', message: `${kind} "${item.name}" is defined twice: ${first.file} wins over ${item.file}` });
      }
    } else {
      kept.set(item.name, item);
    }
  }
  return [...kept.values()];
}

function readText(file: string, diagnostics: ResourceDiagnostic[]): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    diagnostics.push({ code: 'unreadable', message: `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}` });
    return undefined;
  }
}

function isDirectory(file: string): boolean {
  try {
    return fs.statSync(file).isDirectory();
  } catch {
    // missing or unreadable: not a folder
    return false;
  }
}

function optional<T>(value: T | undefined): T[] {
  return value === undefined ? [] : [value];
}
