import { InvalidArgumentError, type Command } from 'commander';
import { resolveHome } from '../host/config.js';
import { isLockHolder, readLock, type LockInfo } from '../host/home-lock.js';

/**
 * `pincer host status` and `pincer host stop`: the host of a home, found by its lock (`<home>/host.lock`), so a host
 * started in the background (`pincer host … &`, a systemd unit, a container) is stopped by its pid, not by whatever
 * process a shell's `kill %1` or `$!` names (`npm exec` wrappers, `nohup`).
 */
export function registerHostControl(host: Command): void {
  host
    .command('status')
    .description('say whether a host runs on this home: its pid, since when, its channels and URL (exit 3: none)')
    .option('--home <dir>', 'data directory (default PINCER_HOME, else ~/.pincer)')
    .action((options: { home?: string }) => {
      const home = resolveHome(process.env, options.home ?? homeFlag(host));
      const lock = readLock(home);
      if (!lock) {
        process.stdout.write(`no host is running on ${home}\n`);
        process.exitCode = 3;
        return;
      }
      process.stdout.write(describeHost(lock, home, Date.now()));
    });
  host
    .command('stop')
    .description('stop the host running on this home (SIGTERM, then wait until it has stopped; exit 3: none runs)')
    .option('--home <dir>', 'data directory (default PINCER_HOME, else ~/.pincer)')
    .option('--timeout <seconds>', 'how long to wait for it to stop (default 60)', parseSeconds, 60)
    .action(async (options: { home?: string; timeout: number }) => {
      process.exitCode = await stopHost(resolveHome(process.env, options.home ?? homeFlag(host)), options.timeout);
    });
}

/** `pincer host status --home D`: commander gives an option the parent command also has to the parent. */
function homeFlag(host: Command): string | undefined {
  return (host.opts() as { home?: string }).home;
}

export function describeHost(lock: LockInfo, home: string, now: number): string {
  const what = lock.command === 'chat' ? 'pincer chat (its own host)' : 'host';
  const since = lock.since ? ` since ${lock.since} (${formatDuration(Math.max(0, now - Date.parse(lock.since)))})` : '';
  const lines = [`${what} running: pid ${lock.pid}${since}`, `home ${home}`];
  if (lock.channels) lines.push(`channels: ${lock.channels.length > 0 ? lock.channels.join(', ') : 'none (scheduled tasks only)'}`);
  if (lock.url) lines.push(`url ${lock.url}`);
  if (lock.chatSocket) lines.push(`pincer chat attaches through ${lock.chatSocket}`);
  return `${lines.join('\n')}\n`;
}

/** `45 s`, `12 min`, `3 h 5 min`, `2 d 4 h`. */
function formatDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

async function stopHost(home: string, timeoutSeconds: number): Promise<number> {
  const lock = readLock(home);
  if (!lock) {
    // Said as an error (a script that meant to stop a host learns there was none), with its own exit code like status.
    process.stderr.write(`pincer: no host is running on ${home}: nothing to stop (for a host on another home: --home DIR or PINCER_HOME)\n`);
    return 3;
  }
  try {
    process.kill(lock.pid, 'SIGTERM');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return 0; // it stopped by itself meanwhile
    process.stderr.write(`pincer: cannot stop the host (pid ${lock.pid}) on ${home}: ${(err as Error).message}\n`);
    return 1;
  }
  // Runners finish their current query within their grace and what they wrote is delivered: that can take a while.
  const deadline = Date.now() + timeoutSeconds * 1000;
  while (isLockHolder(lock) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (isLockHolder(lock)) {
    process.stderr.write(
      `pincer: the host (pid ${lock.pid}) has not stopped after ${timeoutSeconds} s; kill -KILL ${lock.pid} ends it at once (its runners are stopped by the next host)\n`,
    );
    return 1;
  }
  process.stdout.write(`stopped the ${lock.command === 'chat' ? 'pincer chat' : 'host'} (pid ${lock.pid}) on ${home}\n`);
  return 0;
}

function parseSeconds(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0) throw new InvalidArgumentError('must be a number of seconds');
  return seconds;
}
