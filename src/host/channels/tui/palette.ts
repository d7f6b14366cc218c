import type { MarkdownTheme, SelectListTheme } from '@mariozechner/pi-tui';

/**
 * The colours the terminal UI paints with: the agent group's theme (src/runtime/resources/themes.ts), as functions
 * that wrap text in 24-bit colour escapes. Without a theme (NO_COLOR) every function leaves the text as it is.
 */
export interface TuiColours {
  agent: string;
  user: string;
  tool: string;
  notice: string;
  error: string;
  accent: string;
}

export type Paint = (text: string) => string;

export interface TuiPalette {
  agent: Paint;
  user: Paint;
  tool: Paint;
  notice: Paint;
  error: Paint;
  accent: Paint;
  dim: Paint;
  bold: Paint;
  markdown: MarkdownTheme;
  selectList: SelectListTheme;
}

/** `#rrggbb` as a foreground colour around `text` (reset to the default foreground after). */
export function hexPaint(hex: string): Paint {
  const n = Number.parseInt(hex.slice(1), 16);
  const on = `\x1b[38;2;${(n >> 16) & 255};${(n >> 8) & 255};${n & 255}m`;
  return (text) => `${on}${text}\x1b[39m`;
}

const plain: Paint = (text) => text;

export function tuiPalette(colours: TuiColours | undefined): TuiPalette {
  const c = colours ? Object.fromEntries(Object.entries(colours).map(([k, v]) => [k, hexPaint(v)])) : undefined;
  const pick = (key: keyof TuiColours): Paint => c?.[key] ?? plain;
  const dim: Paint = colours ? (text) => `\x1b[2m${text}\x1b[22m` : plain;
  const bold: Paint = colours ? (text) => `\x1b[1m${text}\x1b[22m` : plain;
  const accent = pick('accent');
  return {
    agent: pick('agent'),
    user: pick('user'),
    tool: pick('tool'),
    notice: pick('notice'),
    error: pick('error'),
    accent,
    dim,
    bold,
    markdown: {
      heading: (t) => bold(accent(t)),
      link: accent,
      linkUrl: dim,
      code: pick('tool'),
      codeBlock: plain,
      codeBlockBorder: dim,
      quote: dim,
      quoteBorder: dim,
      hr: dim,
      listBullet: accent,
      bold,
      italic: colours ? (t) => `\x1b[3m${t}\x1b[23m` : plain,
      strikethrough: colours ? (t) => `\x1b[9m${t}\x1b[29m` : plain,
      underline: colours ? (t) => `\x1b[4m${t}\x1b[24m` : plain,
    },
    selectList: {
      selectedPrefix: accent,
      selectedText: (t) => bold(accent(t)),
      description: dim,
      scrollInfo: dim,
      noMatch: dim,
    },
  };
}
