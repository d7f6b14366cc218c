import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PincerError } from '../../shared/errors.js';

/**
 * Whether a group folder declares extensions (the conventional `extensions/` folder, or an `extensions` entry in its
 * package manifest): they may register runtimes the host does not know, since only runners run their code.
 */
export function declaresExtensions(dir: string): boolean {
  if (fs.existsSync(path.join(dir, 'extensions'))) return true;
  try {
    return /"extensions"\s*:/.test(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  } catch {
    return false; // no manifest: nothing declared beyond the conventional folder
  }
}

/** A model an extension's harness runs, as the group's package.json declares it (data: the host never runs extension code). */
export interface ExtensionModel {
  /** `<provider>/<model>`, e.g. `echo/echo-1` */
  ref: string;
  /** the runtime id the extension registers for it (`registerHarness({ id })`) */
  harness: string;
  name?: string;
  contextWindow?: number;
  maxTokens?: number;
}

const ExtensionModelSchema = z.strictObject({
  ref: z.string().regex(/^[a-z0-9][a-z0-9._-]*\/\S+$/, 'a "<provider>/<model>" reference'),
  harness: z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'a runtime id (lower case letters, digits, -)'),
  name: z.string().min(1).max(200).optional(),
  contextWindow: z.number().int().positive().optional(),
  maxTokens: z.number().int().positive().optional(),
});
const ModelsSchema = z.array(ExtensionModelSchema).max(500);

/** What a group folder declares of its extensions' models, and a digest that tells two declarations apart. */
export interface DeclaredModels {
  models: readonly ExtensionModel[];
  /** '' when none are declared */
  digest: string;
}

/**
 * The models the group folder's extensions declare: `"pincer": {"models": [{"ref": "echo/echo-1", "harness": "echo"}]}`
 * in its package.json. Throws {@link PincerError} `config` (one line naming the file) when the declaration is not
 * usable: the build fails and the last good generation keeps serving.
 */
export function declaredModels(dir: string): DeclaredModels {
  const file = path.join(dir, 'package.json');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return { models: [], digest: '' }; // no manifest: nothing declared
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { models: [], digest: '' }; // the resource loader reports a manifest that is not JSON
  }
  const declared = (raw as { pincer?: { models?: unknown } } | null)?.pincer?.models;
  if (declared === undefined) return { models: [], digest: '' };
  const parsed = ModelsSchema.safeParse(declared);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PincerError('config', `${file}: "pincer.models"${issue?.path.length ? `.${issue.path.join('.')}` : ''}: ${issue?.message ?? 'invalid'}`);
  }
  return { models: parsed.data, digest: createHash('sha256').update(JSON.stringify(parsed.data)).digest('hex').slice(0, 16) };
}
