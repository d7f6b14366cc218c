import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeResources, expandPrompt, loadResources, skillsSection } from '../src/runtime/resources/index.js';

const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) fs.rmSync(root, { recursive: true, force: true });
});

/** An agent group folder with the given files (path → content; `null` makes a directory). */
function groupFolder(files: Record<string, string | null>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-resources-'));
  roots.push(root);
  for (const [file, content] of Object.entries(files)) {
    const full = path.join(root, file);
    if (content === null) {
      fs.mkdirSync(full, { recursive: true });
      continue;
    }
    fs.mkdirSync(path.dirname(full), { recursive: true });
    fs.writeFileSync(full, content);
  }
  return root;
}

const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: "${description}"\n---\n# ${name}\n\nSteps.`;
const manifest = (pincer: unknown) => JSON.stringify({ name: 'group', pincer });

describe('resource packages', () => {
  it('loads the conventional skills/ and prompts/ folders', () => {
    const root = groupFolder({
      'skills/pdf/SKILL.md': skill('pdf', 'Work with PDF files'),
      'skills/notes/SKILL.md': '# Notes\n\nKeep short notes in notes.md.\n\nMore.',
      'prompts/review.md': '---\ndescription: Review a change\n---\nReview $ARGUMENTS carefully.',
      'prompts/README.txt': 'not a prompt',
    });
    const loaded = loadResources(root);
    expect(loaded.sources).toEqual({ skills: 'convention', prompts: 'convention', extensions: 'none', themes: 'none' });
    expect(loaded.skills.map((s) => [s.name, s.description])).toEqual([
      ['notes', 'Notes'],
      ['pdf', 'Work with PDF files'],
    ]);
    expect(loaded.skills[1]!.dir).toBe(path.join(root, 'skills/pdf'));
    expect(loaded.prompts).toEqual([
      { name: 'review', description: 'Review a change', template: 'Review $ARGUMENTS carefully.', file: path.join(root, 'prompts/review.md') },
    ]);
    expect(loaded.diagnostics).toEqual([]);
    expect(describeResources(loaded)).toBe('resources: 2 skills (notes, pdf) from convention, 1 prompt (/review) from convention');
  });

  it('follows package.json "pincer" globs with !excludes instead of the conventions', () => {
    const root = groupFolder({
      'package.json': manifest({ skills: ['tools/*/SKILL.md', '!tools/draft/**'], prompts: 'commands/*.md' }),
      'tools/deploy/SKILL.md': skill('deploy', 'Deploy the app'),
      'tools/draft/SKILL.md': skill('draft', 'Unfinished'),
      'skills/ignored/SKILL.md': skill('ignored', 'Not listed'),
      'commands/ship.md': 'Ship it: $ARGUMENTS',
    });
    const loaded = loadResources(root);
    expect(loaded.sources).toEqual({ skills: 'manifest', prompts: 'manifest', extensions: 'none', themes: 'none' });
    expect(loaded.skills.map((s) => s.name)).toEqual(['deploy']);
    expect(loaded.prompts.map((p) => p.name)).toEqual(['ship']);
    expect(loaded.diagnostics).toEqual([]);
  });

  it('falls back to the convention for a kind the manifest does not list', () => {
    const root = groupFolder({ 'package.json': manifest({ prompts: ['commands'] }), 'skills/a/SKILL.md': skill('a', 'A'), 'commands/x.md': 'X' });
    const loaded = loadResources(root);
    expect(loaded.sources).toEqual({ skills: 'convention', prompts: 'manifest', extensions: 'none', themes: 'none' });
    expect(loaded.skills.map((s) => s.name)).toEqual(['a']);
    expect(loaded.prompts.map((p) => p.name)).toEqual(['x']);
  });

  it.each([
    { code: 'missing-path', files: { 'package.json': manifest({ skills: ['skills/gone'] }) }, message: 'skills: "skills/gone" does not exist' },
    {
      code: 'empty-glob',
      files: { 'package.json': manifest({ prompts: ['prompts/*.txt'] }), 'prompts/a.md': 'A' },
      message: 'prompts: "prompts/*.txt" matched nothing',
    },
    {
      code: 'outside-package',
      files: { 'package.json': manifest({ skills: ['../elsewhere/*'] }) },
      message: 'skills: "../elsewhere/*" is outside the package folder',
    },
    { code: 'invalid-manifest', files: { 'package.json': manifest({ skills: 42 }) }, message: '"pincer": skills:' },
    { code: 'invalid-manifest', files: { 'package.json': manifest({ fonts: ['t/*.json'] }) }, message: '"pincer.fonts" is not a resource kind Pincer loads' },
    { code: 'invalid-manifest', files: { 'package.json': '{ not json' }, message: 'package.json: cannot read' },
    { code: 'no-skill-file', files: { 'skills/half/notes.md': 'x' }, message: 'half has no SKILL.md' },
    {
      code: 'name-collision',
      files: { 'skills/a/SKILL.md': skill('same', 'one'), 'skills/b/SKILL.md': skill('same', 'two') },
      message: 'skill "same" is defined twice',
    },
    { code: 'name-collision', files: { 'prompts/clear.md': 'Clear!' }, message: 'collides with the command /clear' },
    { code: 'invalid-name', files: { 'prompts/two words.md': 'x' }, message: '"two words" is not a usable command name' },
    { code: 'unreadable', files: { 'prompts/dir.md': null }, message: 'cannot read' },
  ] as { code: string; files: Record<string, string | null>; message: string }[])('reports $code: $message', ({ code, files, message }) => {
    const loaded = loadResources(groupFolder(files), ['/clear']);
    expect(loaded.diagnostics.map((d) => d.code)).toContain(code);
    expect(loaded.diagnostics.find((d) => d.code === code)!.message).toContain(message);
    expect(describeResources(loaded)).toMatch(/\d+ problems?$/);
  });

  it('loads nothing, silently, from a folder with no resources', () => {
    const loaded = loadResources(groupFolder({ 'CLAUDE.md': 'hi' }));
    expect(loaded).toMatchObject({ skills: [], prompts: [], diagnostics: [], sources: { skills: 'none', prompts: 'none' } });
  });
});

describe('prompt templates and the skills section', () => {
  const prompt = (template: string) => ({ name: 'p', description: undefined, template, file: '/p.md' });

  it.each([
    { template: 'Review $ARGUMENTS now; then $ARGUMENTS again', args: ' src/a.ts ', expected: 'Review src/a.ts now; then src/a.ts again' },
    { template: 'Summarise the day.', args: 'briefly', expected: 'Summarise the day.\n\nbriefly' },
    { template: 'Summarise the day.', args: '', expected: 'Summarise the day.' },
    { template: 'Fix $ARGUMENTS', args: '', expected: 'Fix ' },
  ])('expands "$template" with "$args"', ({ template, args, expected }) => {
    expect(expandPrompt(prompt(template), args)).toBe(expected);
  });

  it('lists every skill with its description and file', () => {
    const section = skillsSection([{ name: 'pdf', description: 'Work with PDFs', file: '/g/skills/pdf/SKILL.md', dir: '/g/skills/pdf' }]);
    expect(section).toContain('## Skills');
    expect(section).toContain('- pdf: Work with PDFs (instructions: /g/skills/pdf/SKILL.md)');
    expect(skillsSection([])).toBeUndefined();
  });
});

describe('extension discovery (found, never run, by the resource loader)', () => {
  it('finds extensions/*.js|mjs and extensions/<name>/index.js by convention; reports TypeScript', () => {
    const root = groupFolder({ 'extensions/a.mjs': 'x', 'extensions/tool/index.js': 'x', 'extensions/b.ts': 'x', 'extensions/notes.md': 'x' });
    const loaded = loadResources(root);
    expect(loaded.sources.extensions).toBe('convention');
    expect(loaded.extensions.map((e) => e.name)).toEqual(['a.mjs', 'tool']);
    expect(loaded.diagnostics).toEqual([
      { code: 'not-javascript', message: `extensions: ${path.join(root, 'extensions/b.ts')} is not JavaScript (.js, .mjs or .cjs); compile it first` },
    ]);
    expect(describeResources(loaded)).toBe('resources: 0 skills from none, 0 prompts from none, 2 extensions (a.mjs, tool) from convention, 1 problem');
  });

  it('takes only the manifest entries when the manifest lists extensions, reporting entries outside the package', () => {
    const root = groupFolder({
      'package.json': manifest({ extensions: ['lib/ext.mjs', '../elsewhere.mjs'] }),
      'lib/ext.mjs': 'x',
      'extensions/ignored.mjs': 'x',
    });
    const loaded = loadResources(root);
    expect(loaded.sources.extensions).toBe('manifest');
    expect(loaded.extensions).toEqual([{ name: 'ext.mjs', file: path.join(root, 'lib/ext.mjs') }]);
    expect(loaded.diagnostics.map((d) => d.code)).toEqual(['outside-package']);
  });
});

describe("themes (a resource kind: JSON files in themes/ or the manifest's entries)", () => {
  const colours = {
    agent: '#ff8800',
    user: '#eeeeee',
    tool: '#aa88ff',
    notice: '#888888',
    error: '#ff0000',
    accent: '#00aaff',
    background: '#101010',
    text: '#eeeeee',
  };

  it('loads a good theme, chooses it by name, and names it in the summary', () => {
    const root = groupFolder({ 'package.json': manifest({ theme: 'dusk' }), 'themes/dusk.json': JSON.stringify({ name: 'dusk', colours }) });
    const loaded = loadResources(root);
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.sources.themes).toBe('convention');
    expect(loaded.theme).toMatchObject({ name: 'dusk', colours, file: path.join(root, 'themes', 'dusk.json') });
    expect(describeResources(loaded)).toBe('resources: 0 skills from none, 0 prompts from none, 1 theme (dusk) from convention, theme dusk');
  });

  it('uses the built-in dark theme by default and light when asked; nothing is said about themes then', () => {
    expect(loadResources(groupFolder({})).theme.name).toBe('dark');
    const light = loadResources(groupFolder({ 'package.json': manifest({ theme: 'light' }) }));
    expect(light.theme).toMatchObject({ name: 'light', file: '(built in)' });
    expect(light.diagnostics).toEqual([]);
    expect(describeResources(loadResources(groupFolder({})))).toBe('resources: 0 skills from none, 0 prompts from none');
  });

  it.each([
    ['not JSON', '{ name: dusk', /themes: .*bad\.json: not JSON/],
    [
      'a colour that is not #rrggbb',
      JSON.stringify({ name: 'bad', colours: { ...colours, agent: 'orange' } }),
      /themes: .*bad\.json: .*colours\.agent.*a colour is #rrggbb/,
    ],
    ['a missing colour', JSON.stringify({ name: 'bad', colours: { ...colours, error: undefined } }), /themes: .*bad\.json: .*colours\.error/],
    ['an unknown key', JSON.stringify({ name: 'bad', colours, font: 'Comic Sans' }), /themes: .*bad\.json: .*font/],
    ['a bad name', JSON.stringify({ name: 'Bad Theme!', colours }), /themes: .*bad\.json: .*a theme name is lower-case/],
  ])('a theme file with %s is a diagnostic and is left out', (_what, content, message) => {
    const root = groupFolder({ 'themes/bad.json': content });
    const loaded = loadResources(root);
    expect(loaded.themes).toEqual([]);
    expect(loaded.diagnostics).toEqual([{ code: 'invalid-theme', message: expect.stringMatching(message) }]);
    expect(loaded.theme.name).toBe('dark');
  });

  it('an unknown chosen theme is a diagnostic naming the known ones; the default applies', () => {
    const loaded = loadResources(groupFolder({ 'package.json': manifest({ theme: 'neon' }), 'themes/dusk.json': JSON.stringify({ name: 'dusk', colours }) }));
    expect(loaded.theme.name).toBe('dark');
    expect(loaded.diagnostics).toEqual([
      { code: 'invalid-theme', message: 'theme "neon" is not a theme of this package or a built-in one (known: dusk, dark, light); using dark' },
    ]);
  });

  it("takes the manifest's entries instead of the folder, and a package theme may replace a built-in one", () => {
    const root = groupFolder({
      'package.json': manifest({ themes: ['looks/*.json'], theme: 'dark' }),
      'looks/dark.json': JSON.stringify({ name: 'dark', colours }),
      'themes/ignored.json': '{',
    });
    const loaded = loadResources(root);
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.sources.themes).toBe('manifest');
    expect(loaded.theme).toMatchObject({ name: 'dark', colours });
  });
});
