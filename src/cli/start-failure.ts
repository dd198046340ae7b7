// Why `svc-node start` could not start, as the one line it prints before exiting 2: what is wrong and what to do.
// An error it does not recognise is a fault of the node, printed with its stack (exit 1).
import type { NodeConfig } from '../config/schema.js';

type StartError = NodeJS.ErrnoException & { cause?: { code?: string }; address?: string; port?: number; hostname?: string };

/** What the start needs from the configuration to name the listener or the directory that failed. */
export type StartSettings = Pick<NodeConfig, 'host' | 'port' | 'dataDir'> & {
  mesh: Pick<NodeConfig['mesh'], 'p2pPort'>;
  metrics: Pick<NodeConfig['metrics'], 'host' | 'port'>;
};

const LISTEN_CODES = new Set(['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL']);
const RESOLVE_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME']);
/** What a file system refuses a data dir for, and what to do about it. */
const DATA_DIR_HINTS: Record<string, string> = {
  EACCES: 'this user may not write there: give --data-dir or SVC_DATA_DIR a directory it owns, or fix the owner and mode',
  EPERM: 'this user may not write there: give --data-dir or SVC_DATA_DIR a directory it owns, or fix the owner and mode',
  EEXIST: 'a file stands where a directory is needed: give --data-dir or SVC_DATA_DIR a directory',
  ENOTDIR: 'a file stands where a directory is needed: give --data-dir or SVC_DATA_DIR a directory',
  EISDIR: 'a directory stands where a file is needed: move it away',
  EROFS: 'the file system is read-only: give --data-dir or SVC_DATA_DIR a writable directory',
  ENOSPC: 'the disk is full: free space or move the data dir',
};
/** mkdir's ENOENT in a parent that stands (util/make-dirs.ts): a file system that makes no directories, such as /proc. */
const MKDIR_ENOENT_HINT = 'no directory can be made there, e.g. under /proc: give --data-dir or SVC_DATA_DIR a directory on a disk';

/** The one-line reason for a failed start, or null when `err` is not one the operator can fix (a fault: its stack). */
export function startFailure(err: unknown, config: StartSettings): string | null {
  if (err === null || typeof err !== 'object') return null;
  const e = err as StartError;
  const metrics = config.metrics.port !== null && e.port === config.metrics.port && e.port !== config.port;
  // A listener that could not open (the API's, or the metrics listener's on its own port) says where.
  if ((e.syscall === 'listen' || e.syscall === 'bind') && e.code !== undefined && LISTEN_CODES.has(e.code)) {
    const where = e.address !== undefined && e.port !== undefined ? `${e.address}:${e.port}` : `${config.host}:${config.port}`;
    const portFlag = metrics ? '--metrics-port' : '--port or SVC_PORT';
    const hostFlag = metrics ? '--metrics-host' : '--host or SVC_HOST';
    const hint =
      e.code === 'EADDRINUSE'
        ? `another process listens there: stop it, or choose another port with ${portFlag}; 0 = any free port`
        : e.code === 'EACCES'
          ? `this user may not listen on that port (below 1024 needs privileges): choose one from 1024 up with ${portFlag}`
          : `no interface of this machine has that address: give ${hostFlag} one of its addresses, e.g. 127.0.0.1 or 0.0.0.0`;
    return `cannot listen on ${where}: ${e.code} (${hint})`;
  }
  if (e.syscall === 'getaddrinfo' && e.code !== undefined && RESOLVE_CODES.has(e.code)) {
    const host = e.hostname ?? config.host;
    const flag = config.metrics.port !== null && host === config.metrics.host && host !== config.host ? '--metrics-host' : '--host or SVC_HOST';
    return `cannot listen on ${host}: the name does not resolve (${e.code}): give ${flag} an address of this machine, e.g. 127.0.0.1 or 0.0.0.0`;
  }
  if (e.cause?.code === 'LEVEL_LOCKED' || e.code === 'LEVEL_LOCKED')
    return `data dir ${config.dataDir} is in use by another node: stop that node, or give this one another data dir (--data-dir or SVC_DATA_DIR)`;
  if (e.name === 'StorageFormatError') return e.message;
  if (e.name === 'UnsupportedListenAddressesError') {
    const why = /EADDRINUSE|EACCES|EADDRNOTAVAIL/.exec(e.message)?.[0];
    const hint =
      why === 'EADDRINUSE'
        ? ' (another process listens there: stop it, or choose another port with --p2p-port or SVC_P2P_PORT; 0 = any free port)'
        : why === undefined
          ? ''
          : ` (check --p2p-port, --host and --listen)`;
    return `cannot listen for libp2p on ${config.host}:${config.mesh.p2pPort}: ${why ?? 'listen failed'}${hint}`;
  }
  // The data dir and its files (node key, secrets, token, store) are made and read before anything listens.
  if (typeof e.path === 'string' && typeof e.syscall === 'string' && e.code !== undefined) {
    const hint = DATA_DIR_HINTS[e.code] ?? (e.code === 'ENOENT' && e.syscall === 'mkdir' ? MKDIR_ENOENT_HINT : undefined);
    if (hint !== undefined) return `data dir ${config.dataDir} cannot be used: ${e.syscall} ${e.path}: ${e.code} (${hint})`;
  }
  return null;
}
