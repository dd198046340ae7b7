// The MMIO register map (spec 4.8, 9 item 6): a node shown as memory-mapped registers a connector reads. Offsets are
// stable: a register keeps its offset, name, type and unit for the life of a map version; a new register takes a
// new offset at the end of its bank (a minor version), and a change to an existing one is a new major version.
// Bank 0x0000 is the node's (public); bank 0x1000 is the caller's own (authenticated).

export const MMIO_VERSION = '1.0';

export type RegisterType = 'u32' | 'u64' | 'f64';

export interface RegisterDef {
  name: string;
  offset: number;
  type: RegisterType;
  unit: string;
  description: string;
}

export const NODE_REGISTERS: readonly RegisterDef[] = [
  { name: 'map_version', offset: 0x0000, type: 'u32', unit: '1', description: 'major version of this register map (1)' },
  { name: 'svcond', offset: 0x0008, type: 'u64', unit: 'tick', description: 'current tick number floor(unix_ns / 777000777)' },
  { name: 'phase', offset: 0x0010, type: 'f64', unit: '1', description: 'position inside the current tick, 0 … 1' },
  { name: 'R_t', offset: 0x0018, type: 'f64', unit: '1', description: 'modulation factor 1 + 1e-3 sin(2π phase + φ0) now' },
  { name: 'sealed_count', offset: 0x0020, type: 'u64', unit: 'result', description: 'results sealed by this node since its data dir was made' },
  { name: 'peers', offset: 0x0028, type: 'u32', unit: 'node', description: 'mesh peers connected now' },
  { name: 'queue_depth', offset: 0x002c, type: 'u32', unit: 'run', description: 'solver runs waiting for a worker now' },
  {
    name: 'coherence',
    offset: 0x0030,
    type: 'f64',
    unit: '1',
    description: "mesh coherenceScore: fraction of peers heard in the last 120 ticks that agree with this node's clock and kernel (null: none heard)",
  },
  { name: 'zeqond_ns', offset: 0x0038, type: 'u64', unit: 'ns', description: 'tick period, exactly 777000777' },
  { name: 'agents_running', offset: 0x0040, type: 'u32', unit: 'agent', description: 'agents running on this node' },
];

export const CALLER_REGISTERS: readonly RegisterDef[] = [
  { name: 'balance_free', offset: 0x1000, type: 'u64', unit: 'credit', description: "the caller's free credits" },
  { name: 'balance_paid', offset: 0x1008, type: 'u64', unit: 'credit', description: "the caller's paid credits" },
  { name: 'balance_total', offset: 0x1010, type: 'u64', unit: 'credit', description: 'free + paid' },
  { name: 'usage_today', offset: 0x1018, type: 'u32', unit: 'computation', description: "the caller's computations today (UTC)" },
  { name: 'allowance_today', offset: 0x101c, type: 'u32', unit: 'computation', description: "the caller's tier allowance per day" },
  { name: 'open_streams', offset: 0x1020, type: 'u32', unit: 'connection', description: "the caller's agent SSE streams open on this node now" },
  { name: 'reactors', offset: 0x1024, type: 'u32', unit: 'reactor', description: 'reactors the caller has opened' },
  { name: 'agents', offset: 0x1028, type: 'u32', unit: 'agent', description: "the caller's agents running now" },
  { name: 'agents_total', offset: 0x102c, type: 'u32', unit: 'agent', description: "the caller's agents ever spawned (running, stopped, killed)" },
];

export type RegisterValues = Record<string, number | null>;

export interface RegisterView extends RegisterDef {
  /** The offset as the hexadecimal a connector writes (0x0008). */
  address: string;
  value: number | null;
}

/** A bank's registers with their values (a value the source did not give is null). */
export function readBank(bank: readonly RegisterDef[], values: RegisterValues): RegisterView[] {
  return bank.map((r) => ({ ...r, address: `0x${r.offset.toString(16).padStart(4, '0')}`, value: values[r.name] ?? null }));
}
