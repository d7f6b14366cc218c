import { createHmac } from 'node:crypto';
import http from 'node:http';
import { waitFor } from './wait.js';
import { closeServer, FailureQueue, listenOnLoopback, readBody } from './fake-http.js';

/**
 * A fake GitHub on 127.0.0.1, written from GitHub's public REST and webhook shapes: `GET /user`, `POST
 * /repos/{owner}/{repo}/issues/{number}/comments` (201 with the comment), `PATCH /repos/{owner}/{repo}/issues/comments/{id}`,
 * `POST …/comments/{id}/reactions`, with `Authorization: token|Bearer <token>`; a rate limit as 429 with `Retry-After`.
 * Webhooks as GitHub sends them (`x-github-event`, `x-github-delivery`, `x-hub-signature-256: sha256=HMAC(secret, body)`).
 */
export interface GitHubCall {
  method: string;
  path: string;
  body: Record<string, unknown>;
  at: number;
  status: number;
}

export interface FakeGitHub {
  url: string;
  token: string;
  webhookSecret: string;
  bot: { id: number; login: string };
  calls: GitHubCall[];
  fail(count: number, status: number, retryAfterS?: number): void;
  /** an issue_comment webhook for a user's comment on `owner/repo#number` (signed with `secret` if given). */
  comment(
    c: { repo: string; number: number; user: string; userId: number; body: string; commentId?: number },
    secret?: string,
  ): { body: string; headers: Record<string, string> };
  comments(): GitHubCall[];
  waitForComment(what: string, predicate: (call: GitHubCall) => boolean, timeoutMs?: number): Promise<GitHubCall>;
  close(): Promise<void>;
}

export async function startFakeGitHub(): Promise<FakeGitHub> {
  const token = 'ghp_testtoken';
  const webhookSecret = 'github-webhook-secret';
  const bot = { id: 9000, login: 'pincer-bot' };
  const calls: GitHubCall[] = [];
  const failures = new FailureQueue();
  let nextId = 5000;

  const server = http.createServer((req, res) => {
    void (async () => {
      const text = (await readBody(req)).toString('utf8');
      const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
      const { pathname } = new URL(req.url ?? '/', 'http://localhost');
      const method = req.method ?? 'GET';
      const record = (status: number): void => void calls.push({ method, path: pathname, body, at: Date.now(), status });
      const answer = (status: number, value: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
        res.end(JSON.stringify(value));
      };
      const auth = req.headers.authorization ?? '';
      if (auth !== `token ${token}` && auth !== `Bearer ${token}`) {
        record(401);
        return answer(401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
      }
      const failure = method !== 'GET' ? failures.take() : undefined;
      if (failure) {
        record(failure.status);
        return answer(
          failure.status,
          { message: failure.status === 429 ? 'API rate limit exceeded' : 'Server Error' },
          failure.status === 429 ? { 'Retry-After': String(failure.retryAfterS) } : {},
        );
      }
      const now = new Date().toISOString();
      const comment = (id: number, commentBody: unknown): Record<string, unknown> => ({
        id,
        body: commentBody,
        user: { id: bot.id, login: bot.login, type: 'User' },
        created_at: now,
        updated_at: now,
        html_url: `https://github.com/x/y#issuecomment-${id}`,
      });
      let match: RegExpExecArray | null;
      if (method === 'GET' && pathname === '/user') {
        record(200);
        return answer(200, { id: bot.id, login: bot.login, type: 'User' });
      }
      if (method === 'POST' && (match = /^\/repos\/[^/]+\/[^/]+\/issues\/\d+\/comments$/.exec(pathname))) {
        record(201);
        return answer(201, comment(nextId++, body.body));
      }
      if (method === 'PATCH' && (match = /^\/repos\/[^/]+\/[^/]+\/issues\/comments\/(\d+)$/.exec(pathname))) {
        record(200);
        return answer(200, comment(Number(match[1]), body.body));
      }
      if (method === 'POST' && /\/comments\/\d+\/reactions$/.test(pathname)) {
        record(201);
        return answer(201, { id: nextId++, content: body.content });
      }
      record(404);
      answer(404, { message: 'Not Found' });
    })();
  });

  const fake: FakeGitHub = {
    url: '',
    token,
    webhookSecret,
    bot,
    calls,
    fail(count, status, retryAfterS) {
      failures.add(count, status, retryAfterS);
    },
    comment(c, secret = webhookSecret) {
      const [owner, name] = c.repo.split('/') as [string, string];
      const now = new Date().toISOString();
      const payload = {
        action: 'created',
        issue: { number: c.number, title: 'An issue', state: 'open', user: { id: c.userId, login: c.user, type: 'User' } },
        comment: {
          id: c.commentId ?? nextId++,
          body: c.body,
          user: { id: c.userId, login: c.user, type: 'User' },
          created_at: now,
          updated_at: now,
          html_url: 'https://github.com/x',
        },
        repository: { id: 1, name, full_name: c.repo, owner: { id: 2, login: owner, type: 'User' } },
        sender: { id: c.userId, login: c.user, type: 'User' },
      };
      const body = JSON.stringify(payload);
      return {
        body,
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issue_comment',
          'x-github-delivery': `delivery-${payload.comment.id}`,
          'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
        },
      };
    },
    comments: () => calls.filter((c) => c.method === 'POST' && c.status === 201 && /\/issues\/\d+\/comments$/.test(c.path)),
    waitForComment: (what, predicate, timeoutMs = 20_000) => waitFor(what, () => fake.comments().find(predicate), { timeoutMs, intervalMs: 10 }),
    async close() {
      await closeServer(server);
    },
  };
  fake.url = `${await listenOnLoopback(server)}`;
  return fake;
}
