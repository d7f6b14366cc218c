import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { z } from 'zod';
import { errorMessage, type Logger } from '../../shared/log.js';
import { isPincerError } from '../../shared/errors.js';
import type { ConversationRef } from '../types.js';
import { TerminalChannel } from './terminal.js';
import type { ChannelAdapter } from './types.js';

/**
 * The home's chat socket (`<home>/chat.sock`): a `pincer chat` run while `pincer host` holds the home attaches here
 * instead of starting a second host. Each connection is the terminal channel of the conversation `pincer chat` always
 * uses (`terminal:local`), lines in and printed lines out, attached to the host while it lasts. The socket is the
 * owner's alone (mode 0600 in the 0700 home): the kernel checks who connects, so no token is passed.
 *
 * The client half-closes its side when the user leaves (Ctrl-D, end of piped input, `/quit`); the host then closes
 * the connection once everything typed has been answered and delivered. A connection that drops detaches at once:
 * what is still due waits for the next `pincer chat`, as it does between two runs of it.
 */
export interface ChatSocketHost {
  attachChannel(channel: ChannelAdapter): Promise<{ detach(): Promise<void> }>;
  sessionOf(conversation: ConversationRef): Promise<{ pipeline: { id: string }; group: { id: string; name: string; provider: string } }>;
  isSettled(sessionId: string): Promise<boolean>;
}

/**
 * The first line the host sends on a connection, as JSON: the chat attached (and who answers it), or was refused
 * (and why: the chat says so and exits 2). Everything after it is the terminal channel's output.
 */
export const ChatSocketHelloSchema = z.union([
  z.object({ attached: z.object({ group: z.string(), provider: z.string(), choice: z.string() }) }),
  z.object({ refused: z.string() }),
]);
export type ChatSocketHello = z.infer<typeof ChatSocketHelloSchema>;

export interface ChatSocketOptions {
  home: string;
  host: ChatSocketHost;
  /** the sender of the lines typed (the host's user: only that user can connect). */
  sender: string;
  /** what runs the group's agent, for the chat's banner (`mock — session policy "mock"`). */
  describeProvider(groupId: string, policy: string): string;
  log: Logger;
}

export function chatSocketPath(home: string): string {
  return path.join(home, 'chat.sock');
}

/** How often an attached chat that is leaving checks whether its conversation is settled. */
const SETTLED_CHECK_MS = 50;

export class ChatSocketServer {
  private readonly connections = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly path: string,
  ) {}

  /** Listens on the home's chat socket; undefined (said in the log) when it cannot, and `pincer chat` is refused then. */
  static async listen(options: ChatSocketOptions): Promise<ChatSocketServer | undefined> {
    const file = chatSocketPath(options.home);
    // the caller holds the home's lock: a socket file left here is a dead host's
    fs.rmSync(file, { force: true });
    const server = net.createServer({ allowHalfOpen: true });
    const socketServer = new ChatSocketServer(server, file);
    server.on('connection', (socket) => void socketServer.serve(socket, options));
    // created owner-only (not chmod-ed after: no moment where another user could connect)
    const umask = process.umask(0o177);
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(file, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      options.log.warn(`no chat socket at ${file} (${errorMessage(err)}): pincer chat cannot attach to this host`);
      return undefined;
    } finally {
      process.umask(umask);
    }
    fs.chmodSync(file, 0o600);
    return socketServer;
  }

  /** Stops listening and ends every attached chat (the host has stopped their channels, or is about to). */
  async close(): Promise<void> {
    for (const socket of this.connections) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    fs.rmSync(this.path, { force: true });
  }

  private async serve(socket: net.Socket, options: ChatSocketOptions): Promise<void> {
    this.connections.add(socket);
    socket.on('error', (err) => options.log.debug(`chat socket: ${errorMessage(err)}`)); // the chat went away; 'close' follows
    let attachment: { detach(): Promise<void> } | undefined;
    let finished = false;
    // What the channel prints waits here until the first line (the hello) is written, then flows to the socket.
    const output = new PassThrough();
    const finish = async (): Promise<void> => {
      if (finished) return;
      finished = true;
      await attachment?.detach();
      if (attachment)
        output.end(); // ends the socket once what the channel printed is through
      else socket.end();
    };
    socket.once('close', () => {
      this.connections.delete(socket);
      void finish();
    });
    let sessionId: string | undefined;
    let leaving = false;
    const terminal = new TerminalChannel({
      input: socket,
      output,
      conversation: 'local',
      sender: options.sender,
      interactive: false,
      onQuit: () => {
        if (leaving) return;
        leaving = true;
        terminal.leave();
        void (async () => {
          await terminal.drained(); // a line read before leaving is still sent
          while (!finished && !(sessionId !== undefined && (await options.host.isSettled(sessionId)))) {
            await new Promise((r) => setTimeout(r, SETTLED_CHECK_MS));
          }
          await finish();
        })().catch((err: unknown) => {
          options.log.warn(`chat socket: ${errorMessage(err)}`);
          socket.destroy();
        });
      },
    });
    try {
      const { pipeline, group } = await options.host.sessionOf(terminal.conversation);
      sessionId = pipeline.id;
      const attached = await options.host.attachChannel(terminal);
      if (finished) return void (await attached.detach()); // the chat went away while it attached
      attachment = attached;
      const hello: ChatSocketHello = { attached: { group: group.name, provider: group.provider, choice: options.describeProvider(group.id, group.provider) } };
      socket.write(`${JSON.stringify(hello)}\n`);
      output.pipe(socket);
      options.log.info('pincer chat attached');
    } catch (err) {
      const why = isPincerError(err, 'conflict') ? 'another pincer chat is attached to this host; leave that one first' : errorMessage(err);
      const hello: ChatSocketHello = { refused: why };
      socket.end(`${JSON.stringify(hello)}\n`);
      finished = true;
    }
  }
}
