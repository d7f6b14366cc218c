import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The import floors of docs/architecture.md, kept true: the table there is the rule, read here, so the document and
 * the check cannot drift apart. Every relative import in src/ (including `import type` and dynamic `import()`) must
 * stay on its floor or go down; src/ and bench/ must have no import cycle.
 */
const ROOT = path.resolve(import.meta.dirname, '..');

function floorsFromDocs(): Map<string, number> {
  const text = fs.readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
  const floors = new Map<string, number>();
  for (const match of text.matchAll(/^\| (\d+) \| `src\/([a-z-]+)` \|/gm)) floors.set(match[2]!, Number(match[1]));
  return floors;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** file → the files it imports (relative specifiers only; packages are outside the floors). */
function importGraph(dirs: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of dirs.flatMap((dir) => sourceFiles(path.join(ROOT, dir)))) {
    const text = fs.readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+)'(\.{1,2}\/[^']+)'/g)].map((m) =>
      path.resolve(path.dirname(file), m[1]!).replace(/\.js$/, '.ts'),
    );
    graph.set(file, targets);
  }
  return graph;
}

/** Strongly connected components with more than one file (Tarjan), as lists of repository paths. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(path.relative(ROOT, w));
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const folderOf = (file: string): string => path.relative(path.join(ROOT, 'src'), file).split(path.sep)[0]!;

describe('import floors (docs/architecture.md)', () => {
  const floors = floorsFromDocs();

  it('the documented table names every folder of src/', () => {
    const folders = fs
      .readdirSync(path.join(ROOT, 'src'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
    expect([...floors.keys()].sort()).toEqual(folders);
  });

  it('no import in src/ climbs to a higher floor', () => {
    const upward: string[] = [];
    for (const [file, targets] of importGraph(['src'])) {
      const from = folderOf(file);
      for (const target of targets) {
        const to = folderOf(target);
        if (to !== from && floors.get(to)! >= floors.get(from)!) {
          upward.push(`${path.relative(ROOT, file)} → ${path.relative(ROOT, target)} (${from} ${floors.get(from)} → ${to} ${floors.get(to)})`);
        }
      }
    }
    expect(upward).toEqual([]);
  });

  it('src/ and bench/ have no import cycle', () => {
    expect(cycles(importGraph(['src', 'bench']))).toEqual([]);
  });

  it('the check sees a climbing import and a cycle when there is one', () => {
    const graph = new Map([
      [path.join(ROOT, 'a.ts'), [path.join(ROOT, 'b.ts')]],
      [path.join(ROOT, 'b.ts'), [path.join(ROOT, 'a.ts')]],
    ]);
    expect(cycles(graph)).toEqual([['a.ts', 'b.ts']]);
    expect(floors.get('db')!).toBeLessThan(floors.get('host')!);
  });
});
