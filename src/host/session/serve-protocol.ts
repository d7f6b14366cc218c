import { z } from 'zod';

/**
 * The wire of `pincer session-serve`: what the host sends it at launch, and the calls of the session port over
 * HTTP. One call per port method (`POST /v1/sessions/<id>/call/<method>` with `{args}`), each with its zod schema,
 * plus `GET /v1/sessions/<id>/files/<row id>/<name>` for the files the agent sent and the open `GET /v1/health`.
 * Every request carries the launch's bearer and epoch (`X-Pincer-Epoch`); every reply carries the epoch.
 */
export const EPOCH_HEADER = 'x-pincer-epoch';

const RoutingFields = {
  channelType: z.string().nullable().optional(),
  platformId: z.string().nullable().optional(),
  threadId: z.string().nullable().optional(),
};

const InboxRowSchema = z.strictObject({
  id: z.string().min(1).max(200),
  kind: z.string().min(1).max(40),
  content: z.unknown(),
  timestamp: z.string().optional(),
  processAfter: z.string().nullable().optional(),
  recurrence: z.string().nullable().optional(),
  seriesId: z.string().nullable().optional(),
  trigger: z.union([z.literal(0), z.literal(1)]).optional(),
  status: z.enum(['pending', 'paused']).optional(),
  traceContext: z.string().nullable().optional(),
  ...RoutingFields,
});

const TaskCommandSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('pause') }),
  z.strictObject({ op: z.literal('resume') }),
  z.strictObject({ op: z.literal('cancel'), by: z.enum(['agent', 'http']) }),
  z.strictObject({
    op: z.literal('update'),
    prompt: z.string().optional(),
    processAfter: z.string().optional(),
    recurrence: z.string().nullable().optional(),
    script: z.string().nullable().optional(),
  }),
]);

const seq = z.number().int().nonnegative();

/** The arguments of each port method, as a tuple. */
export const CALLS = {
  accept: z.tuple([InboxRowSchema]),
  answer: z.tuple([
    z.strictObject({ questionId: z.string().min(1), selectedOption: z.string(), userId: z.string().optional() }),
    z.strictObject({ channelType: z.string(), platformId: z.string(), threadId: z.string().nullable() }),
  ]),
  sync: z.tuple([seq, seq, z.number().int().min(0).max(60_000)]),
  state: z.tuple([]),
  ack: z.tuple([
    z.array(
      z.union([
        z.strictObject({ id: z.string().min(1), delivered: z.literal(true), platformMessageId: z.string().nullable() }),
        z.strictObject({ id: z.string().min(1), delivered: z.literal(false), error: z.string() }),
      ]),
    ),
  ]),
  platformMessageIdOf: z.tuple([seq]),
  publishConfig: z.union([z.tuple([z.record(z.string(), z.unknown())]), z.tuple([z.record(z.string(), z.unknown()), z.record(z.string(), z.string())])]),
  setAdmission: z.tuple([z.strictObject({ over: z.boolean(), notice: z.string(), hold: z.string().optional() })]),
  runner: z.tuple([z.enum(['start', 'stop'])]),
  usageAfter: z.tuple([seq]),
  done: z.tuple([z.array(z.string()).max(100_000), seq]),
  tasks: z.tuple([]),
  changeTask: z.tuple([z.string().min(1), TaskCommandSchema, z.string().min(1)]),
  inbound: z.tuple([z.string().min(1)]),
  logTail: z.tuple([z.number().int().min(1).max(5000)]),
  drain: z.tuple([]),
} as const;

export type CallName = keyof typeof CALLS;

export function isCallName(name: string): name is CallName {
  return Object.hasOwn(CALLS, name);
}

/** What the host writes to a `session-serve` process's stdin at launch (one JSON line; never on a command line). */
export const LaunchDocumentSchema = z.strictObject({
  sessionId: z.string().min(1),
  epoch: z.number().int().positive(),
  /** the bearer every request of this launch carries. */
  token: z.string().min(16),
  /** where to listen: `host:port` (port 0: any free one). */
  listen: z.string().default('127.0.0.1:0'),
  /** stop writing and exit after this long without a request from the host. */
  orphanMs: z.number().int().positive(),
  sweep: z.record(z.string(), z.unknown()),
  runners: z.record(z.string(), z.unknown()),
  launch: z.strictObject({ groupDir: z.string(), globalDir: z.string(), logFile: z.string(), lockFile: z.string().optional() }),
  /** the host's credential proxy socket, bound into sandboxes. */
  credentialProxySocket: z.string().optional(),
  /** the host's OTLP relay (src/host/trace-relay.ts): its socket, bound into sandboxes, and the port they forward. */
  traceRelay: z.strictObject({ socket: z.string().min(1), port: z.number().int().positive() }).optional(),
});
export type LaunchDocument = z.infer<typeof LaunchDocumentSchema>;

/** The line a `session-serve` process prints on stdout once it serves. */
export interface ReadyLine {
  ready: true;
  url: string;
  pid: number;
}
