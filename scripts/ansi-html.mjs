// A tmux capture (`capture-pane -p -e`: text with SGR colour sequences) as escaped HTML spans, for
// scripts/tui-screenshot.mjs. Handles what tmux emits: reset, bold, dim, italic, underline, inverse, the 16 colours,
// 256-colour and true-colour foregrounds and backgrounds; every other escape sequence is dropped.
const BASE = ['#1e1e1e', '#cd3131', '#0dbc79', '#e5e510', '#2472c8', '#bc3fbc', '#11a8cd', '#e5e5e5'];
const BRIGHT = ['#666666', '#f14c4c', '#23d18b', '#f5f543', '#3b8eea', '#d670d6', '#29b8db', '#ffffff'];

function color256(n) {
  if (n < 8) return BASE[n];
  if (n < 16) return BRIGHT[n - 8];
  if (n >= 232) {
    const v = 8 + (n - 232) * 10;
    return `rgb(${v},${v},${v})`;
  }
  const i = n - 16;
  const level = (c) => (c === 0 ? 0 : 55 + c * 40);
  return `rgb(${level(Math.floor(i / 36))},${level(Math.floor(i / 6) % 6)},${level(i % 6)})`;
}

const escapeHtml = (text) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

export function ansiToHtml(input) {
  let style = {};
  let html = '';
  let open = false;
  const apply = (codes) => {
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c === 0) style = {};
      else if (c === 1) style.bold = true;
      else if (c === 2) style.dim = true;
      else if (c === 3) style.italic = true;
      else if (c === 4) style.underline = true;
      else if (c === 7) style.inverse = true;
      else if (c === 22) style.bold = style.dim = false;
      else if (c === 23) style.italic = false;
      else if (c === 24) style.underline = false;
      else if (c === 27) style.inverse = false;
      else if (c >= 30 && c <= 37) style.fg = BASE[c - 30];
      else if (c >= 90 && c <= 97) style.fg = BRIGHT[c - 90];
      else if (c === 39) delete style.fg;
      else if (c >= 40 && c <= 47) style.bg = BASE[c - 40];
      else if (c >= 100 && c <= 107) style.bg = BRIGHT[c - 100];
      else if (c === 49) delete style.bg;
      else if (c === 38 || c === 48) {
        const key = c === 38 ? 'fg' : 'bg';
        if (codes[i + 1] === 5) {
          style[key] = color256(codes[i + 2] ?? 0);
          i += 2;
        } else if (codes[i + 1] === 2) {
          style[key] = `rgb(${codes[i + 2] ?? 0},${codes[i + 3] ?? 0},${codes[i + 4] ?? 0})`;
          i += 4;
        }
      }
    }
  };
  const css = () => {
    let fg = style.fg;
    let bg = style.bg;
    if (style.inverse) [fg, bg] = [bg ?? '#1e1e1e', fg ?? '#d4d4d4'];
    return [
      fg && `color:${fg}`,
      bg && `background:${bg}`,
      style.bold && 'font-weight:bold',
      style.dim && 'opacity:.6',
      style.italic && 'font-style:italic',
      style.underline && 'text-decoration:underline',
    ]
      .filter(Boolean)
      .join(';');
  };
  // eslint-disable-next-line no-control-regex
  for (const part of input.split(/(\x1b\[[0-9;:]*[A-Za-z]|\x1b[^[])/)) {
    if (!part) continue;
    if (part.startsWith('\x1b')) {
      if (part.endsWith('m') && part.startsWith('\x1b[')) {
        const codes = part
          .slice(2, -1)
          .split(/[;:]/)
          .map((n) => (n === '' ? 0 : Number(n)));
        apply(codes);
        if (open) html += '</span>';
        const rule = css();
        html += rule ? `<span style="${rule}">` : '';
        open = Boolean(rule);
      }
      continue;
    }
    html += escapeHtml(part);
  }
  return open ? `${html}</span>` : html;
}
