// Writes the "Every setting" table of docs/configuration.md from the settings registry (src/shared/settings.ts).
// Run after `npm run build`: node scripts/settings-doc.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { withSettingsTable } = await import(path.join(root, 'dist/src/shared/settings-doc.js'));
const file = path.join(root, 'docs/configuration.md');
const before = fs.readFileSync(file, 'utf8');
const after = withSettingsTable(before);
if (after === before) console.log('docs/configuration.md: the settings table is current');
else {
  fs.writeFileSync(file, after);
  console.log('docs/configuration.md: settings table written');
}
