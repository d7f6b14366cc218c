import type { BuiltinResult } from './builtin.js';
import type { BurstResult } from './burst.js';
import type { ColdStartResult } from './cold-start.js';
import type { FollowUpSamples } from './followup.js';
import type { HostStartSamples } from './host-start.js';
import type { FleetResult, IdleResult } from './idle.js';
import type { McpSamples } from './mcp.js';
import type { McpStartSamples } from './mcp-start.js';
import type { ByMode } from './runner-session.js';
import type { PickupSamples } from './pickup.js';
import type { ObservabilitySamples } from './observability.js';
import type { PlatformSamples } from './platform.js';
import { scaleRows } from './report-scale.js';
import type { ScaleResult } from './scale.js';
import type { SessionPortSamples } from './session-port.js';
import { summarize } from './stats.js';
import type { Row } from './table.js';
import type { ThroughputResult } from './throughput.js';

/** Everything one run measured; each group is undefined when it was not run (`--only`). */
export interface BenchResults {
  pickup?: ByMode<PickupSamples>;
  followUp?: ByMode<FollowUpSamples>;
  burst15?: ByMode<BurstResult>;
  burst?: ByMode<BurstResult>;
  idle?: ByMode<IdleResult>;
  throughput?: ByMode<ThroughputResult>;
  fleet?: ByMode<FleetResult>;
  coldStart?: ColdStartResult;
  hostStart?: HostStartSamples;
  mcp?: McpSamples;
  mcpStart?: McpStartSamples;
  platform?: PlatformSamples;
  sessionPort?: SessionPortSamples;
  observability?: ObservabilitySamples;
  builtin?: BuiltinResult;
  scale?: ScaleResult;
}

const atMost = (limit: number, text: string): Row['target'] => ({ text, met: (value) => value <= limit });
/** A fleet target (given for 20 runners: PSS ≤ 300 MiB, CPU ≤ 1 %) scaled to the fleet's size. */
const perRunner = (runners: number, each: number, unit: string): Row['target'] => {
  const limit = Number((runners * each).toFixed(2));
  return atMost(limit, `≤ ${limit} ${unit} (${each} ${unit} each)`);
};

/** The table rows, the performance targets first in their order, then the other measurements (see docs/performance.md). */
export function buildRows(results: BenchResults): Row[] {
  const rows: Row[] = [];
  const { pickup, followUp, burst15, burst, idle, throughput, fleet, coldStart, hostStart, mcp, mcpStart, platform, sessionPort, builtin, observability } =
    results;
  if (pickup) {
    const [w, p] = [summarize(pickup.watch.toQuery), summarize(pickup.poll.toQuery)];
    const n = `n=${w.count}/${p.count}`;
    rows.push(
      {
        metric: `idle pickup: insert → query starts, p50 (${n})`,
        unit: 'ms',
        pincer: w.p50,
        baseline: p.p50,
        better: 'lower',
        target: atMost(10, 'p50 ≤ 10 ms'),
      },
      { metric: 'idle pickup: insert → query starts, p90', unit: 'ms', pincer: w.p90, baseline: p.p90, better: 'lower' },
      { metric: 'idle pickup: insert → query starts, p99', unit: 'ms', pincer: w.p99, baseline: p.p99, better: 'lower', target: atMost(50, 'p99 ≤ 50 ms') },
    );
    const [wr, pr] = [summarize(pickup.watch.toReply), summarize(pickup.poll.toReply)];
    rows.push(
      { metric: 'idle pickup: insert → reply row, p50', unit: 'ms', pincer: wr.p50, baseline: pr.p50, better: 'lower' },
      { metric: 'idle pickup: insert → reply row, p90', unit: 'ms', pincer: wr.p90, baseline: pr.p90, better: 'lower' },
      { metric: 'idle pickup: insert → reply row, p99', unit: 'ms', pincer: wr.p99, baseline: pr.p99, better: 'lower' },
    );
  }
  if (followUp) {
    const [w, p] = [summarize(followUp.watch.toPush), summarize(followUp.poll.toPush)];
    rows.push(
      {
        metric: `follow-up during a query: insert → pushed, p50 (n=${w.count}/${p.count})`,
        unit: 'ms',
        pincer: w.p50,
        baseline: p.p50,
        better: 'lower',
        target: atMost(10, 'p50 ≤ 10 ms'),
      },
      { metric: 'follow-up during a query: insert → pushed, p99', unit: 'ms', pincer: w.p99, baseline: p.p99, better: 'lower' },
      { metric: 'follow-up: not pushed into the running query', unit: 'count', pincer: followUp.watch.missed, baseline: followUp.poll.missed, better: 'lower' },
    );
  }
  if (burst15) {
    rows.push(
      {
        metric: `burst of ${burst15.watch.count}: prompts used`,
        unit: 'count',
        pincer: burst15.watch.batches,
        baseline: burst15.poll.batches,
        better: 'lower',
        target: atMost(2, 'first batch or the next (≤ 2)'),
      },
      {
        metric: `burst of ${burst15.watch.count}: left behind`,
        unit: 'count',
        pincer: burst15.watch.leftBehind,
        baseline: burst15.poll.leftBehind,
        better: 'lower',
        target: atMost(0, '0'),
      },
    );
  }
  if (idle) {
    rows.push(
      {
        metric: `idle CPU of one runner over ${idle.watch.windowMs / 1000} s, idle ${Math.round(idle.watch.idleBeforeMs / 1000)} s before (% of one core)`,
        unit: '%',
        pincer: idle.watch.cpuPercent,
        baseline: idle.poll.cpuPercent,
        better: 'lower',
        target: atMost(0.1, '≤ 0.1 %'),
      },
      {
        metric: 'runner RSS (VmRSS), idle',
        unit: 'MiB',
        pincer: idle.watch.rssMiB,
        baseline: idle.poll.rssMiB,
        better: 'lower',
        target: atMost(54, '≤ 54 MiB'),
      },
      { metric: '  of which private (RssAnon)', unit: 'MiB', pincer: idle.watch.anonMiB, baseline: idle.poll.anonMiB, better: 'lower' },
      {
        metric: 'runner USS (pages no other process maps), idle',
        unit: 'MiB',
        pincer: idle.watch.ussMiB,
        baseline: idle.poll.ussMiB,
        better: 'lower',
        target: atMost(15, '≤ 15 MiB'),
      },
    );
  }
  if (mcp) {
    const s = summarize(mcp.toCommitted);
    rows.push(
      { metric: `MCP send_message: call → row committed, p50 (n=${s.count})`, unit: 'ms', pincer: s.p50, better: 'lower', target: atMost(5, 'p50 ≤ 5 ms') },
      { metric: 'MCP send_message: call → row committed, p99', unit: 'ms', pincer: s.p99, better: 'lower' },
    );
  }
  if (mcpStart) rows.push(...mcpStartRows(mcpStart));
  if (sessionPort) {
    const [r, l] = [summarize(sessionPort.remote), summarize(sessionPort.local)];
    const n = `n=${r.count}/${l.count}`;
    rows.push(
      {
        metric: `session port: POST → answer on the stream, session-serve vs local port, p50 (${n})`,
        unit: 'ms',
        pincer: r.p50,
        baseline: l.p50,
        better: 'lower',
        target: atMost(l.p50 + 3, `≤ local + 3 ms (${(l.p50 + 3).toFixed(1)} ms)`),
      },
      { metric: 'session port: POST → answer on the stream, session-serve vs local port, p99', unit: 'ms', pincer: r.p99, baseline: l.p99, better: 'lower' },
      {
        metric: 'session port: host-side memory per idle session (PSS), session-serve vs local port',
        unit: 'MiB',
        pincer: sessionPort.remoteMiBPerSession,
        baseline: sessionPort.localMiBPerSession,
        better: 'lower',
      },
    );
  }
  if (platform) {
    const [t, h] = [summarize(platform.telegram), summarize(platform.http)];
    rows.push(
      {
        metric: `Telegram message in → answer sent, p50; baseline: HTTP channel (n=${t.count}/${h.count})`,
        unit: 'ms',
        pincer: t.p50,
        baseline: h.p50,
        better: 'lower',
      },
      { metric: '  of which the Chat SDK path (Telegram p50 − HTTP p50)', unit: 'ms', pincer: t.p50 - h.p50, better: 'lower', target: atMost(20, '≤ 20 ms') },
      { metric: 'Telegram message in → answer sent, p90', unit: 'ms', pincer: t.p90, baseline: h.p90, better: 'lower' },
    );
  }
  if (builtin) {
    const { builtin: b, claude: c, mock: m } = builtin;
    const [br, cr] = [summarize(b.toReply), summarize(c.toReply)];
    const processes = (n: number): string => `${n} process${n === 1 ? '' : 'es'}`;
    rows.push(
      {
        metric: `built-in runtime (fake model server): insert → reply row, p50; baseline: Claude Code (n=${br.count}/${cr.count})`,
        unit: 'ms',
        pincer: br.p50,
        baseline: cr.p50,
        better: 'lower',
      },
      { metric: 'built-in runtime: insert → reply row, p90', unit: 'ms', pincer: br.p90, baseline: cr.p90, better: 'lower' },
      {
        metric: `built-in runtime session idle: RSS of the runner and its children (${processes(b.processes)}); baseline: Claude Code session (${processes(c.processes)})`,
        unit: 'MiB',
        pincer: b.rssMiB,
        baseline: c.rssMiB,
        better: 'lower',
        target: atMost(80, '≤ 80 MB'),
      },
      { metric: '  the same as PSS (shared pages split)', unit: 'MiB', pincer: b.pssMiB, baseline: c.pssMiB, better: 'lower' },
      {
        metric: `built-in runtime session, peak RSS during the turns (${processes(b.peakProcesses)}); baseline: Claude Code session (${processes(c.peakProcesses)})`,
        unit: 'MiB',
        pincer: b.peakRssMiB,
        baseline: c.peakRssMiB,
        better: 'lower',
      },
      { metric: '  for comparison: the mock runner alone (no model, no tools), RSS', unit: 'MiB', pincer: m.rssMiB, better: 'lower' },
    );
  }
  if (observability) {
    const [on, off] = [summarize(observability.on), summarize(observability.off)];
    rows.push(
      {
        metric: `host pickup (POST → answer), p50, metrics + tracing on; baseline: off (n=${on.count}/${off.count})`,
        unit: 'ms',
        pincer: on.p50,
        baseline: off.p50,
        better: 'lower',
      },
      {
        metric: '  overhead of metrics + tracing (on p50 / off p50 − 1)',
        unit: '%',
        pincer: (on.p50 / off.p50 - 1) * 100,
        better: 'lower',
        target: atMost(10, '≤ 10 %'),
      },
    );
  }
  if (burst) {
    rows.push(
      {
        metric: `burst of ${burst.watch.count}: insert → all completed (median of ${burst.watch.runs})`,
        unit: 's',
        pincer: burst.watch.seconds,
        baseline: burst.poll.seconds,
        better: 'lower',
      },
      { metric: `burst of ${burst.watch.count}: prompts used`, unit: 'count', pincer: burst.watch.batches, baseline: burst.poll.batches, better: 'lower' },
      {
        metric: `burst of ${burst.watch.count}: left behind`,
        unit: 'count',
        pincer: burst.watch.leftBehind,
        baseline: burst.poll.leftBehind,
        better: 'lower',
        target: atMost(0, '0'),
      },
    );
  }
  if (throughput) {
    const { watch: w, poll: p } = throughput;
    rows.push(
      {
        metric: `sustained throughput (${w.count} messages, ≤ ${w.window} outstanding)`,
        unit: 'msg/s',
        pincer: w.perSecond,
        baseline: p.perSecond,
        better: 'higher',
      },
      { metric: `runner RSS after ${w.count} messages`, unit: 'MiB', pincer: w.rssAfterMiB, baseline: p.rssAfterMiB, better: 'lower' },
      {
        metric: `runner RSS growth over ${w.count} messages`,
        unit: 'MiB',
        pincer: w.rssAfterMiB - w.rssBeforeMiB,
        baseline: p.rssAfterMiB - p.rssBeforeMiB,
        better: 'lower',
      },
    );
  }
  if (coldStart) {
    const [wr, pr] = [summarize(coldStart.watch.toReady), summarize(coldStart.poll.toReady)];
    const [wf, pf] = [summarize(coldStart.watch.toFirstReply), summarize(coldStart.poll.toFirstReply)];
    const bare = summarize(coldStart.bare);
    rows.push(
      {
        metric: `cold start: spawn → ready, p50 (n=${wr.count}/${pr.count})`,
        unit: 'ms',
        pincer: wr.p50,
        baseline: pr.p50,
        better: 'lower',
        target: atMost(90, 'p50 ≤ 90 ms'),
      },
      {
        metric: 'cold start: spawn → reply to a pending message, p50',
        unit: 'ms',
        pincer: wf.p50,
        baseline: pf.p50,
        better: 'lower',
        target: atMost(90, 'p50 ≤ 90 ms'),
      },
      {
        metric: "  for comparison: a bare node -e '' (spawn → exit, the runner's flags and environment), taking turns, p50",
        unit: 'ms',
        pincer: bare.p50,
        better: 'lower',
      },
      {
        metric: "  spawn → reply ÷ bare node -e '' (p50 over p50, same run)",
        unit: 'ratio',
        pincer: wf.p50 / bare.p50,
        baseline: pf.p50 / bare.p50,
        better: 'lower',
        target: atMost(1.3, '≤ ×1.3'),
      },
    );
    rows.push({
      metric: `a message for a session with no runner, with a warm spare: → reply, p50 (n=${coldStart.spare.length}); baseline: cold start`,
      unit: 'ms',
      pincer: summarize(coldStart.spare).p50,
      baseline: wf.p50,
      better: 'lower',
      target: atMost(30, 'p50 ≤ 30 ms'),
    });
    if (coldStart.bareInherited)
      rows.push({
        metric: "  a bare node -e '' with the bench's own NODE_EXTRA_CA_CERTS (not the runners'), p50",
        unit: 'ms',
        pincer: summarize(coldStart.bareInherited).p50,
        better: 'lower',
      });
  }
  if (hostStart) {
    const [none, http, bare] = [summarize(hostStart.none), summarize(hostStart.http), summarize(hostStart.bare)];
    const [noneCpu, httpCpu] = [summarize(hostStart.noneCpu), summarize(hostStart.httpCpu)];
    rows.push(
      { metric: `host start: spawn → ready, no channel, p50 (n=${none.count})`, unit: 'ms', pincer: none.p50, better: 'lower' },
      { metric: '  CPU time to ready, no channel, p50', unit: 'ms', pincer: noneCpu.p50, better: 'lower' },
      { metric: 'host start with --http (HTTP channel, metrics): spawn → ready, p50', unit: 'ms', pincer: http.p50, better: 'lower' },
      { metric: '  CPU time to ready with --http, p50', unit: 'ms', pincer: httpCpu.p50, better: 'lower' },
      { metric: "  for comparison: a bare node -e '' (spawn → exit), p50", unit: 'ms', pincer: bare.p50, better: 'lower' },
    );
  }
  if (fleet) {
    const { watch: w, poll: p } = fleet;
    rows.push(
      { metric: `${w.runners} idle runners: total RSS (sum of VmRSS)`, unit: 'MiB', pincer: w.rssMiB, baseline: p.rssMiB, better: 'lower' },
      {
        metric: `${w.runners} idle runners: total PSS (shared pages split)`,
        unit: 'MiB',
        pincer: w.pssMiB,
        baseline: p.pssMiB,
        better: 'lower',
        target: perRunner(w.runners, 15, 'MiB'),
      },
      {
        metric: `${w.runners} idle runners: total CPU over ${w.windowMs / 1000} s (% of one core)`,
        unit: '%',
        pincer: w.cpuPercent,
        baseline: p.cpuPercent,
        better: 'lower',
        target: perRunner(w.runners, 0.05, '%'),
      },
      {
        metric: `${w.runners} idle runners: CPU per runner (% of one core)`,
        unit: '%',
        pincer: w.perRunnerCpuPercent,
        baseline: p.perRunnerCpuPercent,
        better: 'lower',
      },
    );
  }
  if (results.scale) rows.push(...scaleRows(results.scale));
  return rows;
}

/**
 * The user's MCP servers and the first model call. The delay 3 or 10 servers add (their p50 less the p50 with none) is
 * set beside what the same servers cost a bare MCP client in the same run: started one after another (the baseline,
 * what connecting in turn would add) and all at once (the target's yardstick: the servers' own start, which on a
 * machine of few cores is CPU, not waiting; the runner may add half of it again, as its own start shares those cores).
 * One that never starts costs the start deadline.
 */
function mcpStartRows(m: McpStartSamples): Row[] {
  const [none, one, three, ten, stuck] = [summarize(m.none), summarize(m.one), summarize(m.three), summarize(m.ten), summarize(m.neverStarts)];
  const p50 = (samples: number[]): number => summarize(samples).p50;
  const added = (count: number, servers: typeof three, parallel: number[], serial: number[]): Row => {
    const limit = 1.5 * p50(parallel);
    return {
      metric: `  ${count} healthy MCP servers: delay added (p50 less none's); baseline: a bare client starting them one after another`,
      unit: 'ms',
      pincer: Math.max(0, servers.p50 - none.p50),
      baseline: p50(serial),
      better: 'lower',
      target: atMost(limit, `≤ 1.5 × a bare client starting them at once (${(limit / 1000).toFixed(2)} s)`),
    };
  };
  const deadline = none.p50 + m.startMs + 1000;
  return [
    {
      metric: `first model call (built-in runtime): runner spawn → first request, no user MCP server, p50 (n=${none.count})`,
      unit: 'ms',
      pincer: none.p50,
      better: 'lower',
    },
    { metric: '  with 1 healthy MCP server, p50; baseline: none', unit: 'ms', pincer: one.p50, baseline: none.p50, better: 'lower' },
    { metric: '  with 3 healthy MCP servers, p50; baseline: none', unit: 'ms', pincer: three.p50, baseline: none.p50, better: 'lower' },
    { metric: '  with 10 healthy MCP servers, p50; baseline: none', unit: 'ms', pincer: ten.p50, baseline: none.p50, better: 'lower' },
    added(3, three, m.bare.parallel3, m.bare.serial3),
    added(10, ten, m.bare.parallel10, m.bare.serial10),
    { metric: '  a bare client starting 10 at once (the yardstick), p50', unit: 'ms', pincer: p50(m.bare.parallel10), better: 'lower' },
    {
      metric: `  with one MCP server that never starts (start deadline ${m.startMs / 1000} s), p50; baseline: none`,
      unit: 'ms',
      pincer: stuck.p50,
      baseline: none.p50,
      better: 'lower',
      target: atMost(deadline, `≤ none + the deadline + 1 s (${(deadline / 1000).toFixed(2)} s)`),
    },
  ];
}

/** Summaries beside the raw samples, for the JSON file. */
export function withSummaries(results: BenchResults): unknown {
  return JSON.parse(
    JSON.stringify(results, (key, value: unknown) => {
      if (key !== 'samples' && Array.isArray(value) && value.every((x) => typeof x === 'number') && value.length > 0) {
        return { summary: summarize(value), samples: value.map((x) => Math.round(x * 1000) / 1000) };
      }
      return value;
    }),
  );
}
