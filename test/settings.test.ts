/**
 * The settings registry (src/shared/settings.ts) is the one list: every Pincer setting is in it, only the loaders read
 * the environment, and docs/configuration.md documents every setting with the registry's default.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadLauncherConfig } from '../src/container/config.js';
import { loadSessionConfig } from '../src/db/config-file.js';
import { loadHostConfig } from '../src/host/config.js';
import { isPincerError } from '../src/shared/errors.js';
import { readSetting, settingOrDefault } from '../src/shared/settings-load.js';
import { renderSettingsTable, TABLE_BEGIN, TABLE_END, withSettingsTable } from '../src/shared/settings-doc.js';
import { setting, SETTINGS, settingsSchema, SYSTEM_VARIABLES } from '../src/shared/settings.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const CONFIGURATION = path.join(ROOT, 'docs/configuration.md');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Source lines without comment lines (a comment may name a variable; only code reads one). */
function codeLines(file: string): { line: number; text: string }[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((text, i) => ({ line: i + 1, text }))
    .filter(({ text }) => !/^\s*(\*|\/\/|\/\*)/.test(text));
}

const SRC = sourceFiles(path.join(ROOT, 'src'));
const rel = (file: string): string => path.relative(ROOT, file);

/**
 * Where the environment is read other than through the registry's loaders (src/shared/settings-load.ts), and why.
 * Tests and benches set and read variables freely: they are not scanned.
 */
const PROCESS_ENV_EXCEPTIONS: Record<string, string> = {
  // the entry point, before any module loads (start-up cost, docs/performance.md): source maps for a debug log
  'src/cli/main.ts': 'PINCER_LOG_LEVEL before the bundles load',
  // removes the host's own secrets from its environment (it writes process.env, by name, from the registry's list)
  'src/host/environ-scrub.ts': 'scrubs secrets out of the host process',
  // the values of the secrets the log must never show
  'src/cli/host.ts': 'collects secret values to redact them from the log',
  // a session-serve child gets the system's variables (PATH, HOME, locale) and its two settings, by name
  'src/host/session/served-port.ts': 'passes the system variables to a session-serve child',
  // a spare runner's environment is replaced, whole, by its session's (the launch document's), before anything reads it
  'src/runner/spare.ts': "replaces a spare runner's environment with its session's",
};
/** Not settings: the operating system's and the terminal's variables, read where a program is looked up or drawn. */
const NOT_SETTINGS = new Set([...SYSTEM_VARIABLES, 'NO_COLOR', 'TRACEPARENT', 'XDG_STATE_HOME']);

describe('settings registry', () => {
  it('lists every PINCER_ variable the code names, each once, with one line of meaning', () => {
    const named = new Set<string>();
    for (const file of SRC) for (const m of fs.readFileSync(file, 'utf8').matchAll(/\bPINCER_[A-Z0-9_]*[A-Z0-9]\b/g)) named.add(m[0]);
    // prefixes in prose (`PINCER_K8S_*`) are not names, nor is the constant of the tools' instructions
    const missing = [...named].filter((name) => !setting(name) && !/_$/.test(name) && name !== 'PINCER_TOOLS_INSTRUCTIONS').sort();
    expect(missing).toEqual([]);
    expect(new Set(SETTINGS.map((s) => s.name)).size).toBe(SETTINGS.length);
    for (const s of SETTINGS) expect(s.description, s.name).toMatch(/^[^\n]{3,140}$/);
  });

  it('keeps one default for each setting: every parser accepts an unset variable (the docs check compares the defaults)', () => {
    for (const s of SETTINGS) expect(s.parse.safeParse(undefined).success, s.name).toBe(true);
  });

  it.each([
    ['PINCER_IDLE_TIMEOUT_MS', 'soon', /^bad environment: PINCER_IDLE_TIMEOUT_MS: /],
    ['PINCER_SESSION_MODE', 'per-user', /^bad environment: PINCER_SESSION_MODE: /],
    ['PINCER_K8S_ENDPOINT_PORT', '70000', /^bad environment: PINCER_K8S_ENDPOINT_PORT: /],
  ] as const)('an explicit bad %s fails with the setting named', (name, value, message) => {
    let caught: unknown;
    try {
      readSetting({ [name]: value }, name);
    } catch (err) {
      caught = err;
    }
    expect(isPincerError(caught) && caught.code).toBe('config');
    expect(() => readSetting({ [name]: value }, name)).toThrow(message);
  });

  it('reads a lenient setting as its default when the value is bad, and as the value when it is good', () => {
    expect(settingOrDefault({ PINCER_PROVIDER_TIMEOUT_MS: 'x' }, 'PINCER_PROVIDER_TIMEOUT_MS')).toBe(120_000);
    expect(settingOrDefault({ PINCER_PROVIDER_TIMEOUT_MS: '250' }, 'PINCER_PROVIDER_TIMEOUT_MS')).toBe(250);
    expect(settingOrDefault({ PINCER_LOG_LEVEL: 'DEBUG' }, 'PINCER_LOG_LEVEL')).toBe('debug');
    expect(settingOrDefault({ PINCER_LOG_LEVEL: 'loud' }, 'PINCER_LOG_LEVEL')).toBe('info');
  });

  it('gives PINCER_RUNNER one default, auto, in the host and the launcher (where auto is a process)', () => {
    expect(settingsSchema(['PINCER_RUNNER']).parse({}).PINCER_RUNNER).toBe('auto');
    expect(loadHostConfig({ PINCER_HOME: '/nonexistent/home' }).runners.kind).toBe('auto');
    expect(loadLauncherConfig({}).kind).toBe('process');
    expect(loadLauncherConfig({ PINCER_RUNNER: 'bwrap' }).kind).toBe('bwrap');
  });

  it('fails the loaders on a bad explicit value with the variable named', () => {
    expect(() => loadHostConfig({ PINCER_IDLE_TIMEOUT_MS: '-1' })).toThrow(/bad host environment: PINCER_IDLE_TIMEOUT_MS/);
    expect(() => loadLauncherConfig({ PINCER_CONTAINER_MEMORY: 'lots' })).toThrow(/PINCER_CONTAINER_MEMORY: like 512m or 2g/);
    expect(() => loadSessionConfig({ PINCER_WORKSPACE: ROOT, PINCER_WAKE: 'sometimes' })).toThrow(/bad environment: PINCER_WAKE/);
  });
});

describe('environment reads', () => {
  it('process.env is read only by the loaders (passing it to one is fine; PATH, TERM and the like are not settings)', () => {
    const found: string[] = [];
    for (const file of SRC) {
      if (rel(file).startsWith('src/shared/settings') || PROCESS_ENV_EXCEPTIONS[rel(file)]) continue;
      for (const { line, text } of codeLines(file)) {
        for (const m of text.matchAll(/process\.env\s*(?:\??\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[)/g))
          if (!NOT_SETTINGS.has(m[1] ?? '')) found.push(`${rel(file)}:${line}: ${text.trim()}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('no code reads a variable by name from an environment object except through the registry', () => {
    const found: string[] = [];
    // `env.NAME`, `config.env.NAME`, `baseEnv.NAME`, `env['NAME']`; writes (`env.NAME = …`) build a child's environment
    const read = /\b[A-Za-z_.]*[eE]nv\s*\??\.\s*([A-Z][A-Z0-9_]*)\b(?!\s*=[^=])|\b[A-Za-z_.]*[eE]nv\s*\[\s*'([A-Z][A-Z0-9_]*)'\s*\](?!\s*=[^=])/g;
    for (const file of SRC) {
      if (rel(file).startsWith('src/shared/settings') || PROCESS_ENV_EXCEPTIONS[rel(file)]) continue;
      for (const { line, text } of codeLines(file)) {
        for (const m of text.matchAll(read)) {
          const name = m[1] ?? m[2]!;
          if (!NOT_SETTINGS.has(name)) found.push(`${rel(file)}:${line}: ${name}`);
        }
      }
    }
    expect(found).toEqual([]);
  });

  it('the checks see a read: a line of each kind is caught', () => {
    const read = /\b[A-Za-z_.]*[eE]nv\s*\??\.\s*([A-Z][A-Z0-9_]*)\b(?!\s*=[^=])/;
    expect(read.test("const x = config.env.PINCER_MODEL ?? 'a';")).toBe(true);
    expect(read.test("out.env.PINCER_WORKSPACE = '/workspace';")).toBe(false);
    expect(/process\.env\s*(\??\.\s*[A-Za-z_]|\[)/.test('if (process.env.PINCER_X) go();')).toBe(true);
    expect(/process\.env\s*(\??\.\s*[A-Za-z_]|\[)/.test('loadHostConfig(process.env);')).toBe(false);
  });
});

/** `| \`A\` / \`B\` | 1 / 2 | …` → [['A', '1'], ['B', '2']]: the names and defaults of each hand-written row. */
function documentedDefaults(markdown: string): { name: string; documented: string; row: string }[] {
  const out: { name: string; documented: string; row: string }[] = [];
  const generated = markdown.slice(markdown.indexOf(TABLE_BEGIN), markdown.indexOf(TABLE_END));
  for (const row of markdown.replace(generated, '').split('\n')) {
    const cells = row.split(/(?<!\\)\|/).map((c) => c.trim());
    if (cells.length < 5 || !cells[1]!.startsWith('`')) continue; // a row with a default column: | name | default | meaning |
    const names = cells[1]!.split(/\s*\/\s*/).map((n) =>
      n
        .replace(/`/g, '')
        .replace(/\s*\(.*\)$/, '')
        .trim(),
    );
    const defaults = cells[2]!.split(/\s*\/\s*/);
    if (names.length !== defaults.length) continue;
    names.forEach((name, i) => out.push({ name, documented: defaults[i]!.replace(/`/g, '').trim(), row: row.slice(0, 60) }));
  }
  return out;
}

describe('docs/configuration.md', () => {
  const markdown = fs.readFileSync(CONFIGURATION, 'utf8');

  it('holds the table generated from the registry, current (node scripts/settings-doc.mjs writes it)', () => {
    expect(markdown).toContain(TABLE_BEGIN);
    expect(withSettingsTable(markdown)).toBe(markdown);
    for (const s of SETTINGS) expect(renderSettingsTable()).toContain(`| \`${s.name}\` |`);
  });

  it("documents each of Pincer's own settings in a hand-written table too", () => {
    const handWritten = markdown.replace(markdown.slice(markdown.indexOf(TABLE_BEGIN), markdown.indexOf(TABLE_END)), '');
    // Pincer's own settings; the SDKs' and the system's variables (OTEL_*, DOCKER_*, CLAUDE_CODE_*) are in the generated table
    const ours = SETTINGS.filter((s) => s.source === 'user' && (s.name.startsWith('PINCER_') || s.name === 'AGENT_PROVIDER'));
    const undocumented = ours.filter((s) => !handWritten.includes(`\`${s.name}\``)).map((s) => s.name);
    expect(undocumented).toEqual([]);
  });

  it('writes no default that differs from the registry', () => {
    const wrong = documentedDefaults(markdown)
      .filter(({ name }) => setting(name))
      .filter(({ name, documented }) => {
        const registry = setting(name)!.default;
        const plain = documented === '—' ? '' : documented;
        // a number with a unit or a note after it (`5000 (min 1)`) counts by its first word
        // a setting without a default of its own: the docs say where its value comes from instead
        return registry !== '' && plain !== registry && plain.split(/[\s,;]/)[0] !== registry;
      })
      .map(({ name, documented }) => `${name}: docs say "${documented}", the registry "${setting(name)!.default}"`);
    expect(wrong).toEqual([]);
  });

  it('the check sees a wrong default', () => {
    const bad = '| variable | default | meaning |\n|---|---|---|\n| `PINCER_MAX_TRIES` | 9 | tries |\n';
    expect(documentedDefaults(bad)).toEqual([{ name: 'PINCER_MAX_TRIES', documented: '9', row: expect.any(String) }]);
  });
});
