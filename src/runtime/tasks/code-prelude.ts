/**
 * The JavaScript code mode runs inside the sandbox before the program (src/runtime/tasks/code-mode.ts): `console`,
 * `tools` (search, describe, call, and one async function per tool of the catalogue), a fixed `Date` and a seeded
 * `Math.random` (so a replayed slice sees what the first one saw). It takes the host functions it needs and removes
 * them from the global object. `__CLOCK__` and `__SEED__` are replaced with numbers before it runs.
 */
export const GUEST_PRELUDE = String.raw`
(() => {
  const print = globalThis.__pincer_print;
  const call = globalThis.__pincer_call;
  const settle = globalThis.__pincer_settle;
  const catalogue = JSON.parse(globalThis.__pincer_catalogue);
  for (const name of ['__pincer_print', '__pincer_call', '__pincer_settle', '__pincer_catalogue']) delete globalThis[name];

  const show = (value) => {
    if (typeof value === 'string') return value;
    if (value instanceof Error) return value.stack ? value.name + ': ' + value.message + '\n' + value.stack : String(value);
    try {
      const text = JSON.stringify(value);
      return text === undefined ? String(value) : text;
    } catch {
      return String(value);
    }
  };
  const line = (...args) => print(args.map(show).join(' '));
  globalThis.console = { log: line, info: line, warn: line, error: line, debug: line };

  const byName = new Map(catalogue.map((tool) => [tool.name, tool]));
  const invoke = (name, args) => {
    if (!byName.has(name)) return Promise.reject(new TypeError('no tool "' + name + '" (tools.search(query) finds tools)'));
    let json;
    try {
      json = JSON.stringify(args === undefined ? {} : args);
    } catch (err) {
      return Promise.reject(new TypeError('the arguments of ' + name + ' are not JSON: ' + err.message));
    }
    const outcome = call(name, json);
    if (outcome === undefined) return new Promise(() => {});
    const parsed = JSON.parse(outcome);
    return parsed.ok ? Promise.resolve(parsed.value) : Promise.reject(new Error(name + ': ' + parsed.error));
  };
  const words = (text) => String(text).toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  const api = {
    /** tools whose name or description has every word of the query (all tools for an empty query) */
    search(query = '') {
      const wanted = words(query);
      return catalogue
        .filter((tool) => {
          const text = (tool.name + ' ' + tool.description).toLowerCase();
          return wanted.every((word) => text.includes(word));
        })
        .map((tool) => ({ name: tool.name, description: tool.description }));
    },
    describe(name) {
      const tool = byName.get(name);
      if (!tool) throw new TypeError('no tool "' + name + '" (tools.search(query) finds tools)');
      return JSON.parse(JSON.stringify(tool));
    },
    call: invoke,
  };
  globalThis.tools = new Proxy(api, {
    get(target, prop) {
      if (typeof prop !== 'string') return undefined;
      if (Object.prototype.hasOwnProperty.call(target, prop)) return target[prop];
      if (!byName.has(prop)) return undefined;
      return (args) => invoke(prop, args);
    },
    has: (target, prop) => typeof prop === 'string' && (Object.prototype.hasOwnProperty.call(target, prop) || byName.has(prop)),
    ownKeys: () => [...Object.keys(api), ...byName.keys()],
    getOwnPropertyDescriptor: (target, prop) =>
      typeof prop === 'string' && (Object.prototype.hasOwnProperty.call(target, prop) || byName.has(prop))
        ? { configurable: true, enumerable: true, value: Object.prototype.hasOwnProperty.call(target, prop) ? target[prop] : (args) => invoke(prop, args) }
        : undefined,
  });

  const clock = __CLOCK__;
  const RealDate = Date;
  class FixedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(clock);
      else super(...args);
    }
    static now() {
      return clock;
    }
  }
  globalThis.Date = FixedDate;
  let seed = __SEED__;
  Math.random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };

  globalThis.__pincer_finish = (promise) =>
    promise.then(
      (value) => settle(true, value === undefined ? '' : typeof value === 'string' ? value : show(value)),
      (error) => settle(false, error instanceof Error ? show(error) : 'uncaught: ' + show(error)),
    );
})();
`;
