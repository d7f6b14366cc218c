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
