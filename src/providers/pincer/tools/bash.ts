import type { AgentTool } from '@mariozechner/pi-agent-core';
import { Type } from '@mariozechner/pi-ai';
import { spawn } from 'node:child_process';
import { childEnv } from '../../child-env.js';
import { defineTool } from './define.js';
import { truncateMiddle, type ToolLimits } from './limits.js';

/**
 * The built-in runtime's `bash` tool: runs a command in the agent folder with a timeout, in its own process group
 * (killed whole on timeout or abort), with only the basic environment (PATH, HOME, locale — never a key), and with
 * its combined output cut to the size limit.
 */
export function bashTool(cwd: string, env: Record<string, string | undefined>, limits: ToolLimits): AgentTool {
  const shellEnv = childEnv(env, []);
  return defineTool({
    name: 'bash',
    label: 'Run command',
    description:
      `Run a bash command in the agent folder and return its output (stdout and stderr, cut to ${limits.maxOutputChars} characters) ` +
      `and exit code. Default timeout ${Math.round(limits.bashTimeoutMs / 1000)} s, at most ${Math.round(limits.bashMaxTimeoutMs / 1000)} s.`,
    parameters: Type.Object({
      command: Type.String({ description: 'the command line' }),
      timeoutSeconds: Type.Optional(Type.Number({ minimum: 1, description: 'give up after this many seconds' })),
    }),
    execute: (_id, params, signal) => {
      const timeoutMs = Math.min(params.timeoutSeconds ? params.timeoutSeconds * 1000 : limits.bashTimeoutMs, limits.bashMaxTimeoutMs);
      return new Promise((resolve, reject) => {
        if (signal?.aborted) return reject(new Error('aborted'));
        const child = spawn('bash', ['-c', params.command], { cwd, env: shellEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
        let output = '';
        let dropped = 0;
        const keep = limits.maxOutputChars * 2;
        const collect = (chunk: Buffer): void => {
          output += chunk.toString('utf8');
          // Keep memory bounded for a command that prints without end: the head and a moving tail survive.
          if (output.length > keep * 2) {
            dropped += output.length - keep;
            output = output.slice(0, keep / 2) + output.slice(output.length - keep / 2);
          }
        };
        child.stdout.on('data', collect);
        child.stderr.on('data', collect);
        let stoppedBy: string | null = null;
        const killGroup = (why: string): void => {
          stoppedBy ??= why;
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {
            // already gone
          }
        };
        const timer = setTimeout(() => killGroup(`timed out after ${Math.round(timeoutMs / 1000)} s`), timeoutMs);
        const onAbort = (): void => killGroup('aborted');
        signal?.addEventListener('abort', onAbort, { once: true });
        child.once('error', (err) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        });
        child.once('close', (code, sig) => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          const body = truncateMiddle(output, limits.maxOutputChars) + (dropped ? `\n[${dropped} more characters were dropped]` : '');
          if (stoppedBy) return reject(new Error(`command ${stoppedBy}\n${body}`));
          const status = code === null ? `killed by ${sig}` : `exit code ${code}`;
          const result = { content: [{ type: 'text' as const, text: `${body || '(no output)'}\n[${status}]` }], details: { exitCode: code } };
          if (code === 0) resolve(result);
          else reject(new Error(result.content[0]!.text));
        });
      });
    },
  });
}
