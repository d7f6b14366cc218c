import net from 'node:net';
import readline from 'node:readline';
import { ChatSocketHelloSchema, type ChatSocketHello } from '../host/channels/chat-socket.js';
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
export async function attachToHost(lock: LockInfo & { chatSocket: string }, home: string, asked: { provider?: string; save?: boolean }): Promise<number> {
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
  socket.setEncoding('utf8');
  const { hello, rest } = await readHello(socket, lock.pid);
  if ('refused' in hello) {
    socket.destroy();
    throw new PincerError('conflict', hello.refused);
  }
  const { group, provider, choice } = hello.attached;
  // The host's agent group answers with the provider the host runs it on: a chat cannot choose another one.
  if ((asked.provider !== undefined && asked.provider !== provider) || asked.save) {
    socket.destroy();
    const flag = asked.save ? '--save' : `--provider ${asked.provider}`;
    throw new PincerError(
      'conflict',
      `${flag}: pincer host (pid ${lock.pid}) runs this home, and its agent group ${group} answers with provider ${provider}; leave out ${asked.save ? '--provider and --save' : '--provider'} to talk to it, or stop it first (pincer host stop)`,
    );
  }
  const interactive = process.stdin.isTTY === true;
  const out = process.stdout;
  if (interactive) {
    out.write(`Pincer chat — attached to pincer host (pid ${lock.pid}): agent group ${group}, provider ${choice}\n`);
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
  const print = (text: string): void => {
    out.write(interactive ? `${CLEAR_LINE}${text}` : text);
    prompt();
  };
  if (rest) print(rest);
  socket.on('data', print);
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

/** The host's first line (attached, or refused and why), and what came after it in the same read. */
async function readHello(socket: net.Socket, pid: number): Promise<{ hello: ChatSocketHello; rest: string }> {
  let text = '';
  const line = await new Promise<string | undefined>((resolve) => {
    const onData = (chunk: string): void => {
      text += chunk;
      if (!text.includes('\n')) return;
      socket.off('data', onData).off('close', onClose);
      resolve(text.slice(0, text.indexOf('\n')));
    };
    const onClose = (): void => resolve(undefined);
    socket.on('data', onData).once('close', onClose);
  });
  const hello = line === undefined ? undefined : ChatSocketHelloSchema.safeParse(parseJson(line));
  if (hello?.success) return { hello: hello.data, rest: text.slice(text.indexOf('\n') + 1) };
  // no hello (an older host's one line, or nothing): refused with what it said
  return { hello: { refused: line?.replace(/^pincer: /, '') || `pincer host (pid ${pid}) closed the chat before it attached` }, rest: '' };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // not JSON: not a hello
  }
}
