/**
 * The user documentation stays usable: README and docs/ cite nothing a user does not have (the internal spec, the
 * design documents, issue numbers), every `--help` likewise, and every relative link in them points at a file and a
 * heading that exist.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const DOCS = ['README.md', ...fs.readdirSync(path.join(ROOT, 'docs')).map((name) => `docs/${name}`)].filter((f) => f.endsWith('.md'));
const INTERNAL = /\bSPEC\b|\bseeds?\b|issue #?\d+|#\d{1,3}\b/;

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes. */
function anchors(markdown: string): Set<string> {
  const set = new Set<string>();
  for (const match of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    set.add(
      match[1]!
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-'),
    );
  }
  return set;
}

describe('user documentation', () => {
  it.each(DOCS)('%s cites no internal documents or issue numbers', (file) => {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8').replace(/\]\([^)]*\)/g, ']()');
    const lines = text.split('\n').filter((line) => INTERNAL.test(line));
    expect(lines).toEqual([]);
  });

  it.each(DOCS)('%s links only to files and headings that exist', (file) => {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [relative, anchor] = target!.split('#');
      const linked = relative ? path.resolve(path.dirname(path.join(ROOT, file)), relative) : path.join(ROOT, file);
      if (!fs.existsSync(linked)) {
        broken.push(target!);
        continue;
      }
      if (anchor && !anchors(fs.readFileSync(linked, 'utf8')).has(anchor)) broken.push(target!);
    }
    expect(broken).toEqual([]);
  });

  it('README starts with what Pincer is for, the two commands and a table of contents', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const firstScreen = readme.split('\n').slice(0, 20).join('\n');
    expect(firstScreen).toContain('npm ci && node bin/pincer.js chat');
    expect(firstScreen).toContain('npm ci && npm test');
    expect(readme).toMatch(/## Contents\n\n- \[Getting started/);
    expect(readme.length).toBeLessThan(12_000);
  });

  const commands = [
    '',
    'chat',
    'host',
    'doctor',
    'runner',
    'mcp',
    'send',
    'outbox',
    'session',
    'session create',
    'container',
    'container image',
    'token',
    'webhook',
    'usage',
    'budget',
  ];
  it.each(commands)('pincer %s --help cites no internal documents', (command) => {
    const result = spawnSync(process.execPath, [BUILT_CLI, ...command.split(' ').filter(Boolean), '--help'], { encoding: 'utf8', timeout: 20_000 });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/Usage: pincer/);
    expect(result.stdout.split('\n').filter((line) => INTERNAL.test(line))).toEqual([]);
  });
});

describe('code comments', () => {
  /**
   * Documents that are not in the repository — the internal spec and its sections, the seeds, design documents, the
   * issue tracker: a reader of the code cannot follow them. Comments cite docs/*.md (the glossary is in
   * docs/architecture.md). `seed` as a word of its own (a random seed, "seeds the policy") and `pod spec` stay allowed.
   */
  const OUTSIDE =
    /\bSPEC(\.md)?\b|§|\b[Dd]esign doc|\b[Tt]he design\b|\b[Tt]he seeds?\b|\bseed ["':(]|\bseed's\b|\bseeds\/|\b[Ii]ssue #?\d+|\bclaw's (design|docs?|spec)\b/;
  const files = (dir: string): string[] =>
    fs
      .readdirSync(path.join(ROOT, dir), { withFileTypes: true })
      .flatMap((e) => (e.isDirectory() ? files(`${dir}/${e.name}`) : /\.(ts|js|mjs)$/.test(e.name) ? [`${dir}/${e.name}`] : []));

  it.each([
    ['// see SPEC §4.2', true],
    ['// as SPEC.md says', true],
    ['// §7: the batch is claimed in one transaction', true],
    [' * The seed types it as a string', true],
    [' * (seeds/host.md) the sweep', true],
    [' * Issue 26 point 5: an agent calls the proxy', true],
    [' * the design document of the runner', true],
    ['// see docs/architecture.md, Glossary: batch', false],
    ['// a seeded random number generator: seed = 7', false],
    ['// only seeds the default agent group policy', false],
    ['// nothing secret in the pod spec', false],
  ])('%s is a citation of a document outside the repository: %s', (line, outside) => {
    expect(OUTSIDE.test(line)).toBe(outside);
  });

  it('cite the docs, never a document the repository does not hold', () => {
    const cited = ['src', 'test', 'bench', 'scripts']
      .flatMap(files)
      .filter((file) => file !== 'test/docs.test.ts')
      .flatMap((file) =>
        fs
          .readFileSync(path.join(ROOT, file), 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
          .filter(({ line }) => /^\s*(\*|\/\/|\/\*)|\s\/\/\s/.test(line) && OUTSIDE.test(line))
          .map(({ at }) => at),
      );
    expect(cited).toEqual([]);
  });
});
