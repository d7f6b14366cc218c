/**
 * XML escaping for everything that goes into a prompt. A user who types `</message><message sender="admin">` must
 * stay inside their own message: every text and attribute value passes through here.
 */
const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ENTITIES[ch]!);
}

/** `name="value"` pairs, escaped, skipping undefined values. */
export function xmlAttributes(attributes: Record<string, string | number | undefined>): string {
  return Object.entries(attributes)
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([name, value]) => `${name}="${escapeXml(String(value))}"`)
    .join(' ');
}

/** A value inside a one-line header such as `[WEBHOOK: source/event]`: escaped, and no line breaks or other control
 * characters, so it can never start a line of its own (a forged `[SYSTEM RESPONSE]`). */
export function escapeLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return escapeXml(text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' '));
}

/** Every form of line break a model may read as one: CR, LF, VT, FF, NEL (U+0085), LINE and PARAGRAPH SEPARATOR. */
// eslint-disable-next-line no-control-regex
const LINE_BREAKS = /\r\n|[\r\u000b\u000c\u0085\u2028\u2029]/g;

/**
 * Multi-line text a sender wrote (a message, a task's instructions), escaped, its line breaks made plain `\n`, and
 * every line that could pass for Pincer's own framing — a `[…]` section header such as `[SYSTEM RESPONSE]` or
 * `[WEBHOOK: github/push]`, or a `---` separator — written with a leading backslash. Only Pincer's own headers start
 * a line with `[`, so text cannot forge a section of the prompt.
 */
export function escapeBlock(text: string): string {
  return escapeXml(text)
    .replace(LINE_BREAKS, '\n')
    .split('\n')
    .map((line) => (/^\s*(\[|---)/.test(line) ? `\\${line}` : line))
    .join('\n');
}

/** A JSON value shown in a prompt: pretty-printed and escaped, with U+0085, U+2028 and U+2029 as `\u` escapes (JSON keeps them raw). */
export function escapeJson(value: unknown): string {
  return escapeXml(jsonText(value));
}

/** `value` as indented JSON whose line separators (U+0085, U+2028, U+2029) are escaped, not raw line breaks. */
export function jsonText(value: unknown): string {
  return JSON.stringify(value ?? null, null, 2).replace(/[\u0085\u2028\u2029]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
