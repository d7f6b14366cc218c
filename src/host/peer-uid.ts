import fs from 'node:fs';
import type net from 'node:net';

/**
 * The user owning the other end of a loopback TCP connection, from the kernel's socket table (`/proc/net/tcp`, whose
 * `uid` column is the socket owner's). Every local user can connect to a port on 127.0.0.1; a server that hands out
 * something valuable there (the credential proxy: model calls on the host's key) refuses other users with this.
 * Undefined when it cannot be told (not Linux, not IPv4 loopback, the entry already gone): the caller decides.
 */
export function loopbackPeerUid(socket: net.Socket): number | undefined {
  const { remoteAddress, remotePort, localPort } = socket;
  if (remotePort === undefined || localPort === undefined) return undefined;
  if (remoteAddress !== '127.0.0.1' && remoteAddress !== '::ffff:127.0.0.1') return undefined;
  let table: string;
  try {
    table = fs.readFileSync('/proc/net/tcp', 'latin1');
  } catch {
    // no /proc/net/tcp (another OS): the peer is unknown and refused by the caller
    return undefined;
  }
  // the peer's own socket: local = its address and port, remote = ours (addresses in the kernel's byte order)
  const needle = `: ${hexAddress(remoteAddress)}:${hexPort(remotePort)} ${hexAddress('127.0.0.1')}:${hexPort(localPort)} `;
  const at = table.indexOf(needle);
  if (at === -1) return undefined;
  const line = table.slice(at, table.indexOf('\n', at) === -1 ? undefined : table.indexOf('\n', at));
  // after "sl:" — local rem st tx:rx tr:when retrnsmt uid …
  const fields = line.slice(2).trim().split(/\s+/);
  const uid = Number(fields[6]);
  return Number.isInteger(uid) ? uid : undefined;
}

function hexPort(port: number): string {
  return port.toString(16).toUpperCase().padStart(4, '0');
}

/** An IPv4 address as /proc/net/tcp writes it: the 32-bit value in host (little-endian on x86 and arm) order. */
function hexAddress(address: string): string {
  const parts = address
    .replace(/^::ffff:/, '')
    .split('.')
    .map(Number);
  const value = Buffer.from(parts);
  const le = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
  return Buffer.from(le ? [...value].reverse() : value)
    .toString('hex')
    .toUpperCase();
}
