// Safe markdown: the text is parsed into Preact elements, never into HTML, so nothing a message contains can become
// markup or script. Supports what agents write most: paragraphs, fenced code, inline code, **bold**, *italic*,
// headings, lists and http(s)/mailto links. Anything else stays literal text.
import { html } from '/web/vendor/preact-htm.js';

const SAFE_URL = /^(https?:|mailto:)/i;

function inline(text) {
  const out = [];
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const token = m[0];
    if (m[1]) out.push(html`<code>${token.slice(1, -1)}</code>`);
    else if (m[2]) out.push(html`<strong>${token.slice(2, -2)}</strong>`);
    else if (m[3]) out.push(html`<em>${token.slice(1, -1)}</em>`);
    else {
      const [, label, href] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(token);
      out.push(SAFE_URL.test(href) ? html`<a href=${href} rel="noopener noreferrer nofollow" target="_blank">${label}</a>` : token);
    }
    last = m.index + token.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function Markdown({ text }) {
  const blocks = [];
  const lines = String(text ?? '').split('\n');
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    if (line.startsWith('```')) {
      const code = [];
      for (i += 1; i < lines.length && !lines[i].startsWith('```'); i += 1) code.push(lines[i]);
      i += 1;
      blocks.push(html`<pre><code>${code.join('\n')}</code></pre>`);
    } else if (/^#{1,6} /.test(line)) {
      blocks.push(html`<p><strong>${inline(line.replace(/^#+ /, ''))}</strong></p>`);
      i += 1;
    } else if (/^\s*([-*]|\d+\.) /.test(line)) {
      const items = [];
      for (; i < lines.length && /^\s*([-*]|\d+\.) /.test(lines[i]); i += 1) items.push(lines[i].replace(/^\s*([-*]|\d+\.) /, ''));
      blocks.push(
        html`<ul>
          ${items.map((item) => html`<li>${inline(item)}</li>`)}
        </ul>`,
      );
    } else if (line.trim() === '') {
      i += 1;
    } else {
      const para = [];
      for (; i < lines.length && lines[i].trim() !== '' && !lines[i].startsWith('```') && !/^\s*([-*]|\d+\.) /.test(lines[i]); i += 1) para.push(lines[i]);
      blocks.push(html`<p>${para.flatMap((p, n) => (n === 0 ? inline(p) : [html`<br />`, ...inline(p)]))}</p>`);
    }
  }
  return html`<div class="md">${blocks}</div>`;
}
