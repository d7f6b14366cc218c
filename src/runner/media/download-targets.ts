import type dns from 'node:dns';
import { createRequire } from 'node:module';
import type { BlockList, LookupFunction } from 'node:net';
import { PincerError } from '../../shared/errors.js';

/** node:net on first use: a runner whose messages carry no URL (most of them) never loads it. */
let netModule: typeof import('node:net') | undefined;
function net(): typeof import('node:net') {
  return (netModule ??= createRequire(import.meta.url)('node:net') as typeof import('node:net'));
}

/**
 * Where an attachment download may connect. An attachment's `url` comes from whoever can post a message, so by default
 * the runner refuses addresses inside the machine or its network — loopback, private (RFC 1918, fc00::/7, fec0::/10),
 * link-local (169.254/16 with the cloud metadata service, fe80::/10), unspecified, shared (100.64/10), multicast,
 * reserved (192.0.0/24, 198.18/15, 240/4) and Teredo, also written as IPv4-mapped IPv6 or reached through NAT64
 * (64:ff9b::/96) or 6to4 (2002::/16) — unless `PINCER_ATTACHMENT_ALLOW_HOSTS` names the host or its address. The
 * check is made on the address the socket actually connects to (through the connection's `lookup`), so a name that resolves to a public
 * address at first and to 127.0.0.1 later (DNS rebinding) gets no further than one that always did.
 */

/** `PINCER_ATTACHMENT_ALLOW_HOSTS` parsed: `*`, or host names (exact, any case) and addresses/CIDR ranges. */
export interface DownloadAllowList {
  any: boolean;
  names: ReadonlySet<string>;
  /** the addresses and ranges allowed; undefined when none are. */
  addresses: BlockList | undefined;
}

/** How a host name becomes addresses (dns.lookup by default; tests inject their own). */
export type ResolveHost = (hostname: string) => Promise<dns.LookupAddress[]>;

/** Thrown through a connection's lookup when every address of a name is refused. */
/** Kept as a subclass: the download's report names the host, the address and what it is. */
export class RefusedTargetError extends PincerError {
  constructor(
    readonly hostname: string,
    readonly address: string,
    /** what the address is, e.g. `a loopback address` */
    readonly kind: string,
  ) {
    super('forbidden', `${hostname} resolves to ${address}, ${kind}`);
    this.name = 'RefusedTargetError';
  }
}

const SETTING = 'PINCER_ATTACHMENT_ALLOW_HOSTS';

/** The ranges refused by default, each with the words the refusal uses (built on first use, as node:net is loaded). */
let refusedRanges: ReadonlyArray<[label: string, ranges: BlockList]> | undefined;
const refused = (): ReadonlyArray<[label: string, ranges: BlockList]> =>
  (refusedRanges ??= [
    [
      'a loopback',
      ranges([
        ['127.0.0.0', 8],
        ['::1', 128],
      ]),
    ],
    // fec0::/10: the deprecated site-local range, still routed inside some networks
    [
      'a private',
      ranges([
        ['10.0.0.0', 8],
        ['172.16.0.0', 12],
        ['192.168.0.0', 16],
        ['fc00::', 7],
        ['fec0::', 10],
      ]),
    ],
    [
      'a link-local',
      ranges([
        ['169.254.0.0', 16],
        ['fe80::', 10],
      ]),
    ],
    [
      'an unspecified',
      ranges([
        ['0.0.0.0', 8],
        ['::', 128],
      ]),
    ],
    ['a shared (carrier-grade NAT)', ranges([['100.64.0.0', 10]])],
    [
      'a multicast or broadcast',
      ranges([
        ['224.0.0.0', 4],
        ['255.255.255.255', 32],
        ['ff00::', 8],
      ]),
    ],
    // never a public server: protocol assignments (NAT64 discovery), benchmarking (used for internal networks), class E
    [
      'a reserved',
      ranges([
        ['192.0.0.0', 24],
        ['198.18.0.0', 15],
        ['240.0.0.0', 4],
      ]),
    ],
    // Teredo hides the client's IPv4 address (inverted) in its last bits and leads through a relay: never a file server
    ['a Teredo tunnel', ranges([['2001::', 32]])],
  ]);

function ranges(list: Array<[string, number]>): BlockList {
  const block = new (net().BlockList)();
  for (const [network, prefix] of list) block.addSubnet(network, prefix, net().isIPv6(network) ? 'ipv6' : 'ipv4');
  return block;
}

/** Parse the setting; a malformed entry fails with a line naming it (explicit configuration fails closed). */
export function parseAllowHosts(value: string): DownloadAllowList {
  const names = new Set<string>();
  let addresses: BlockList | undefined;
  let any = false;
  for (const raw of value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)) {
    if (raw === '*') {
      any = true;
      continue;
    }
    const [bracketed, prefixText, extra] = raw.split('/');
    const network = unbracket(bracketed ?? '');
    // Only an entry that looks like an address needs node:net to tell (a name has no ':' and does not end in a digit).
    const family = /:|\d$/.test(network) ? net().isIP(network) : 0;
    if (family !== 0) {
      const max = family === 4 ? 32 : 128;
      const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
      if (extra !== undefined || !(prefix >= 0 && prefix <= max)) {
        throw new Error(`${SETTING}: "${raw}" is not an address or CIDR range (e.g. 10.0.0.0/8)`);
      }
      (addresses ??= new (net().BlockList)()).addSubnet(network, prefix, family === 4 ? 'ipv4' : 'ipv6');
    } else if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/i.test(raw)) {
      names.add(raw.toLowerCase());
    } else {
      throw new Error(`${SETTING}: "${raw}" is not a host name, address, CIDR range or *`);
    }
  }
  return { any, names, addresses };
}

/** Nothing allowed beyond the default: public addresses only. */
export const PUBLIC_ONLY: DownloadAllowList = parseAllowHosts('');
/** Everything allowed (`*`). */
export const ANYWHERE: DownloadAllowList = parseAllowHosts('*');

/** A URL's host as a bare name or address (`[::1]` → `::1`). */
export function unbracket(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/** True when the URL's host name is allowed as such, so any address it resolves to may be used. */
export function nameAllowed(hostname: string, allow: DownloadAllowList): boolean {
  return allow.any || allow.names.has(unbracket(hostname).toLowerCase());
}

/** What kind of address `address` is when the runner may not connect to it (`a loopback address`), else undefined. */
export function refusedAddress(address: string, allow: DownloadAllowList): string | undefined {
  const type = net().isIPv6(address) ? 'ipv6' : 'ipv4';
  if (allow.any || allow.addresses?.check(address, type)) return undefined;
  const hit = refused().find(([, block]) => block.check(address, type));
  if (hit) return `${hit[0]} address`;
  if (type !== 'ipv6') return undefined;
  // IPv6 addresses that lead to an IPv4 address inside them are judged by it: on an IPv6-only network with DNS64, a
  // name whose A record is 10.0.0.5 resolves to 64:ff9b::a00:5 too and the NAT64 gateway connects to 10.0.0.5; a
  // 6to4 address 2002:a00:5:: is routed to the 6to4 relay of 10.0.0.5.
  for (const [label, block, group] of embedding()) {
    if (!block.check(address, 'ipv6')) continue;
    const embedded = ipv4At(address, group);
    const inner = refusedAddress(embedded, allow);
    return inner && `${inner} through ${label} (${embedded})`;
  }
  return undefined;
}

/** IPv6 ranges that carry an IPv4 address, and at which 16-bit group it starts. */
let embeddingRanges: ReadonlyArray<[label: string, ranges: BlockList, group: number]> | undefined;
const embedding = (): ReadonlyArray<[label: string, ranges: BlockList, group: number]> =>
  (embeddingRanges ??= [
    ['NAT64', ranges([['64:ff9b::', 96]]), 6],
    ['6to4', ranges([['2002::', 16]]), 1],
  ]);

/** The IPv4 address in the two 16-bit groups of `address` starting at `group`. */
function ipv4At(address: string, group: number): string {
  const groups = expandIpv6(address);
  const [hi, lo] = [groups[group]!, groups[group + 1]!];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded; a dotted IPv4 tail as its two groups). */
function expandIpv6(address: string): number[] {
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1); // lower-case, hex only
  const [head, tail] = canonical.includes('::') ? canonical.split('::') : [canonical, undefined];
  const part = (text: string | undefined): number[] => (text ? text.split(':').map((g) => parseInt(g, 16)) : []);
  const left = part(head);
  const right = part(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** What to do about a refusal, for the end of the prompt's note. */
export const REFUSAL_HINT = `downloads from loopback, private and link-local addresses are refused unless ${SETTING} allows them`;

const systemResolve: ResolveHost = async (hostname) => (await import('node:dns')).promises.lookup(hostname, { all: true });

/**
 * A `lookup` for http(s).request that resolves the name, drops every refused address, and hands the socket only the
 * checked ones — so the address connected to is always one that passed. With none left it fails with the reason.
 */
export function guardedLookup(allow: DownloadAllowList, resolve: ResolveHost = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (found) => {
        const wanted = found.filter((a) => !options.family || a.family === options.family);
        const usable = wanted.filter((a) => refusedAddress(a.address, allow) === undefined);
        const first = wanted[0];
        if (usable.length === 0 && first) {
          callback(new RefusedTargetError(hostname, first.address, refusedAddress(first.address, allow)!), '', 0);
          return;
        }
        if (usable.length === 0) {
          callback(Object.assign(new Error(`${hostname} has no IPv${options.family} address`), { code: 'ENOTFOUND' }), '', 0);
          return;
        }
        if (options.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}
