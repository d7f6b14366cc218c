import { SETTINGS, type Setting } from './settings.js';

/**
 * The "Every setting" table of docs/configuration.md, generated from the registry (src/shared/settings.ts) by
 * `node scripts/settings-doc.mjs` after a build; test/settings.test.ts fails when the file holds another table.
 */
export const TABLE_BEGIN = '<!-- settings table: generated from src/shared/settings.ts by `node scripts/settings-doc.mjs`; do not edit -->';
export const TABLE_END = '<!-- end of settings table -->';

const READ_BY: Record<Setting['reader'], string> = { host: 'host', launcher: 'launcher', runner: 'runner', both: 'host, runner' };

const cell = (text: string): string => text.replace(/\|/g, '\\|');

export function renderSettingsTable(settings: readonly Setting[] = SETTINGS): string {
  const rows = settings.map((s) => {
    const def = s.default === '' ? '—' : `\`${s.default}\``;
    const notes = [s.secret ? 'secret' : '', s.source !== 'user' ? `set by the ${s.source}` : ''].filter(Boolean).join(', ');
    return `| \`${s.name}\` | ${READ_BY[s.reader]} | ${cell(def)} | ${cell(s.description)}${notes ? ` (${notes})` : ''} |`;
  });
  return [TABLE_BEGIN, '', '| variable | read by | default | meaning |', '|---|---|---|---|', ...rows, '', TABLE_END].join('\n');
}

/** `markdown` with its generated table replaced by the current one (appended under `heading` when it has none). */
export function withSettingsTable(markdown: string, heading = '## Every setting'): string {
  const table = renderSettingsTable();
  const begin = markdown.indexOf(TABLE_BEGIN);
  const end = markdown.indexOf(TABLE_END);
  if (begin >= 0 && end > begin) return markdown.slice(0, begin) + table + markdown.slice(end + TABLE_END.length);
  return `${markdown.trimEnd()}\n\n${heading}\n\n${table}\n`;
}
