import net from 'node:net';
import readline from 'node:readline';
import type { LockInfo } from '../host/home-lock.js';
import { PincerError } from '../shared/errors.js';

const PROMPT = 'you> ';
/** Clear the current terminal line (the prompt and what was typed) before printing over it. */
const CLEAR_LINE = '\r\x1b[2K';

/**
 * `pincer chat` while a host runs on the home: the lines typed go to the host's chat socket, and what the host's
 * terminal channel prints comes back. Leaving (Ctrl-D, end of piped input, `/quit`, Ctrl-C) half-closes the socket and
 * the host closes it once everything typed is answered; a second Ctrl-C leaves at once (what is due waits for the next
 * chat). Returns the exit code.
 */
export async function attachToHost(lock: LockInfo & { chatSocket: string }, home: string): Promise<number> {
  const socket = net.createConnection({ path: lock.chatSocket, allowHalfOpen: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', (err) =>
      reject(
        new PincerError(
          'unavailable',
          `a host (pid ${lock.pid}) runs on ${home} but its chat socket does not answer (${err.message}); try again, or pincer host stop`,
        ),
      ),
    );
  });
  socket.on('error', () => undefined); // the host went away: 'close' follows and the chat ends
  const interactive = process.stdin.isTTY === true;
  const out = process.stdout;
  if (interactive) {
    out.write(`Pincer chat — attached to the host (pid ${lock.pid}): its agent group's provider answers\n`);
    out.write(`home ${home}\n/help for commands · /quit or Ctrl-D to leave\n`);
  }
  const rl = readline.createInterface({ input: process.stdin, output: out, terminal: interactive });
  rl.setPrompt(PROMPT);
  const prompt = (): void => {
    if (interactive && !leaving) rl.prompt(true);
  };
  let leaving = false;
  const quit = (): void => {
    if (leaving) return void socket.destroy();
    leaving = true;
    if (interactive) out.write(`${CLEAR_LINE}pincer: leaving once what you typed is answered — Ctrl-C again to quit now\n`);
    socket.end();
  };
  socket.setEncoding('utf8').on('data', (text: string) => {
    out.write(interactive ? `${CLEAR_LINE}${text}` : text);
    prompt();
  });
  rl.on('line', (line) => {
    if (leaving) return;
    socket.write(`${line}\n`);
    if (line.trim() === '/quit' || line.trim() === '/exit') quit();
    prompt();
  });
  rl.on('SIGINT', quit); // a terminal in raw mode: Ctrl-C reaches readline, not the process
  rl.on('close', () => {
    if (!leaving) quit();
  });
  process.on('SIGINT', quit);
  prompt();
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  process.off('SIGINT', quit);
  rl.removeAllListeners('close');
  rl.close();
  process.stdin.destroy(); // nothing more is read: the process may exit
  return 0;
}
