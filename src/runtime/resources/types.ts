/**
 * Resource packages: an agent group folder declares skills, prompts and extensions in its
 * `package.json` under `"pincer"` (paths or globs relative to the folder, `!pattern` excludes), else in the
 * conventional `skills/<name>/SKILL.md`, `prompts/<name>.md` and `extensions/*.{js,mjs}` (or `extensions/<name>/index.js`). Loading never fails and never stays silent: every
 * problem becomes a diagnostic for the runner's log and `pincer doctor`.
 */

export interface SkillResource {
  /** frontmatter `name`, else the skill's folder name (or the file name for a single-file skill) */
  name: string;
  /** frontmatter `description`, else the first paragraph of the body */
  description: string;
  /** the SKILL.md (or single .md) file */
  file: string;
  /** the skill's folder: what a provider that loads skills natively (Claude) is given */
  dir: string;
}

export interface PromptResource {
  /** the slash command name without the slash, lower case: `prompts/Review.md` → `review` */
  name: string;
  description: string | undefined;
  /** the body without frontmatter; `$ARGUMENTS` is replaced by the command's arguments */
  template: string;
  file: string;
}

/** An extension module: JavaScript the runner imports to register harnesses and tools (src/providers/extensions.ts). */
export interface ExtensionResource {
  /** the file name without the folder: `shout.mjs`, or the folder name for `extensions/<name>/index.js` */
  name: string;
  file: string;
}

/** A theme (themes.ts): the colours of the chat's lines and of the web page. */
export interface ThemeResource {
  name: string;
  description?: string;
  /** the JSON file, or `(built in)` */
  file: string;
  colours: { agent: string; user: string; tool: string; notice: string; error: string; accent: string; background: string; text: string };
}

export type ResourceDiagnosticCode =
  | 'invalid-theme'
  | 'not-javascript'
  | 'extension-failed'
  | 'invalid-manifest'
  | 'missing-path'
  | 'empty-glob'
  | 'outside-package'
  | 'no-skill-file'
  | 'unreadable'
  | 'invalid-name'
  | 'name-collision';

export interface ResourceDiagnostic {
  code: ResourceDiagnosticCode;
  /** one line, naming the file or entry */
  message: string;
}

export interface LoadedResources {
  /** the agent group folder the resources were loaded from */
  root: string;
  /** where each kind was declared */
  sources: { skills: ResourceSource; prompts: ResourceSource; extensions: ResourceSource; themes: ResourceSource };
  skills: SkillResource[];
  prompts: PromptResource[];
  /** found, not loaded: only a runner imports them (their code runs in the agent's sandbox, never in the host) */
  extensions: ExtensionResource[];
  /** the package's own themes */
  themes: ThemeResource[];
  /** the theme the group uses: its `"theme"`, else the built-in `dark` */
  theme: ThemeResource;
  diagnostics: ResourceDiagnostic[];
}

/** `manifest`: package.json "pincer"; `convention`: the skills/ or prompts/ folder; `none`: neither exists. */
export type ResourceSource = 'manifest' | 'convention' | 'none';
