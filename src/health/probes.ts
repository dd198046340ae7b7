// The two readings of the machine the health checks make themselves: free space on the data dir's file system, and
// whether an announced address accepts a TCP connection.
import { statfs } from 'node:fs/promises';
import { connect } from 'node:net';
import { multiaddr } from '@multiformats/multiaddr';

export interface DiskSpace {
  freeBytes: number;
  totalBytes: number;
}

/** Space an unprivileged writer (the node) may still use on the file system holding `dir`. */
export async function diskSpace(dir: string): Promise<DiskSpace> {
  const s = await statfs(dir);
  return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
}

/** Host and port of a TCP multiaddr (/ip4, /ip6, /dns*), or null for any other transport. */
export function tcpTarget(address: string): { host: string; port: number } | null {
  try {
    const o = multiaddr(address).toOptions();
    return o.transport === 'tcp' ? { host: o.host, port: o.port } : null;
  } catch {
    return null;
  }
}

/** Does host:port accept a TCP connection within `timeoutMs`? Resolves to null when it does, else the reason. */
export function tcpRefusal(target: { host: string; port: number }, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: target.host, port: target.port });
    const done = (reason: string | null) => {
      socket.destroy();
      resolve(reason);
    };
    socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs} ms`));
    socket.once('connect', () => done(null));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
  });
}
