/**
 * A program in a real terminal: a tmux session on a private server socket, keys sent with `send-keys` (so Ctrl-C and
 * Ctrl-D are the terminal's own keys, not signals), the screen read with `capture-pane`. `stopAllTerminals()` in an
 * `afterEach` kills every session and its server.
 */
import { spawnSync } from 'node:child_process';
import { waitFor } from './wait.js';

export const HAS_TMUX = spawnSync('tmux', ['-V']).status === 0;

const SOCKET = `pincer-test-${process.pid}`;
const sessions = new Set<string>();
let next = 0;

function tmux(...args: string[]): string {
  const result = spawnSync('tmux', ['-L', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`tmux ${args[0]} failed: ${result.stderr}`);
  return result.stdout;
}

export interface Terminal {
  /** `send-keys` arguments: text, `Enter`, `C-c`, `C-d`. */
  keys(...keys: string[]): void;
  /** type a line and press Enter. */
  line(text: string): void;
  /** the whole screen and scroll-back, trailing blank lines dropped. */
  screen(): string;
  /** the same with its colours as escape sequences (`capture-pane -e`). */
  styledScreen(): string;
  /** wait until the screen matches. */
  waitFor(what: string, test: (screen: string) => boolean, timeoutMs?: number): Promise<string>;
  /** the program's exit code, once it has ended (the session prints it). */
  exitCode(): number | undefined;
}

/** Run `argv` in a new 150×40 terminal with `env` (and of this process's environment only PATH and HOME). */
export function openTerminal(argv: string[], env: Record<string, string>): Terminal {
  const name = `t${next++}`;
  const quote = (a: string): string => `'${a.replace(/'/g, `'\\''`)}'`;
  const vars = Object.entries({ PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', TERM: 'xterm', ...env }).map(([k, v]) => quote(`${k}=${v}`));
  // Only the given environment (env -i): no key of the test machine reaches the program. The shell prints the exit
  // code and keeps the pane open, so the screen can be read after the program ended.
  const command = `env -i ${vars.join(' ')} ${argv.map(quote).join(' ')}; echo "[exit $?]"; sleep 600`;
  tmux('new-session', '-d', '-s', name, '-x', '150', '-y', '40', command);
  sessions.add(name);
  const terminal: Terminal = {
    keys: (...keys) => void tmux('send-keys', '-t', name, ...keys),
    line: (text) => {
      tmux('send-keys', '-t', name, '-l', text);
      tmux('send-keys', '-t', name, 'Enter');
    },
    screen: () => tmux('capture-pane', '-p', '-J', '-S', '-', '-t', name).replace(/\n+$/, ''),
    styledScreen: () => tmux('capture-pane', '-p', '-e', '-J', '-S', '-', '-t', name).replace(/\n+$/, ''),
    waitFor: (what, test, timeoutMs = 30_000) =>
      waitFor(
        what,
        () => {
          const screen = terminal.screen();
          return test(screen) ? screen : undefined;
        },
        { timeoutMs, intervalMs: 50 },
      ),
    exitCode: () => {
      const match = /\[exit (\d+)\]/.exec(terminal.screen());
      return match ? Number(match[1]) : undefined;
    },
  };
  return terminal;
}

export function stopAllTerminals(): void {
  for (const name of sessions) spawnSync('tmux', ['-L', SOCKET, 'kill-session', '-t', name]);
  sessions.clear();
  spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
}
