// What an operator must see without looking for it: the node's warnings, as /api/health lists them. A warning is an
// episode: it starts when its condition is first seen (one warn log line), counts while the condition lasts, and ends
// when the condition is gone (one info log line). The codes are one closed list (docs/operating.md, "Warnings").

/** Every warning code a node raises, and what it means (the table of docs/operating.md follows this list). */
export const WARNING_CODES = [
  /** Peers' mesh events fail the handshake: they run with another mesh secret (or none). */
  'MESH_HANDSHAKE_REJECTED',
  /** Bootstrap peers are configured and the node holds no connection. */
  'MESH_NO_PEERS',
  /** An address in mesh.announce does not accept a TCP connection. */
  'MESH_ANNOUNCE_UNREACHABLE',
  /** Peers' tick events are stamped ticks away from this node's clock (or refused as stale). */
  'CLOCK_SKEW',
  /** The data dir's file system is nearly full. */
  'DISK_LOW',
  /** An outbox (transfers, charge settlements, consensus deliveries) or the webhook deliveries keep growing. */
  'BACKLOG_GROWING',
  /** Solver or seal worker threads die as they start: the node cannot run solvers or seal on them. */
  'WORKERS_NOT_STARTING',
  /** The node holds its maximum of keys minted elsewhere learnt from gossip: new ones are looked up at first use. */
  'MESH_KEYS_FULL',
] as const;

export type WarningCode = (typeof WARNING_CODES)[number];

/** A warning as /api/health shows it. */
export interface Warning {
  code: WarningCode;
  /** What was seen, in a sentence naming the peers, addresses or figures involved. */
  message: string;
  /** When the episode started (ISO 8601). */
  since: string;
  /** How often the condition was seen in this episode (refused handshakes; for the others, the checks that found it). */
  count: number;
}

export interface WarningLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

interface Episode {
  message: string;
  sinceMs: number;
  count: number;
}

/** The open episodes, in the order of WARNING_CODES. */
export class WarningBook {
  private readonly open = new Map<WarningCode, Episode>();

  constructor(
    private readonly nowMs: () => number,
    private readonly log: WarningLog,
  ) {}

  /** The condition of `code` is seen (`times` occurrences): a new episode logs once; an open one counts on. */
  raise(code: WarningCode, message: string, times = 1): void {
    const e = this.open.get(code);
    if (e) {
      e.message = message;
      e.count += times;
      return;
    }
    this.open.set(code, { message, sinceMs: this.nowMs(), count: times });
    this.log.warn({ warning: code }, message);
  }

  /** The condition of `code` is gone: its episode ends (logged once), if one was open. */
  clear(code: WarningCode): void {
    const e = this.open.get(code);
    if (!e) return;
    this.open.delete(code);
    this.log.info({ warning: code, count: e.count, since: new Date(e.sinceMs).toISOString() }, `warning ${code} cleared`);
  }

  has(code: WarningCode): boolean {
    return this.open.has(code);
  }

  list(): Warning[] {
    return WARNING_CODES.flatMap((code) => {
      const e = this.open.get(code);
      return e ? [{ code, message: e.message, since: new Date(e.sinceMs).toISOString(), count: e.count }] : [];
    });
  }
}
