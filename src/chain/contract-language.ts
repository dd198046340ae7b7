// The JSON contract language (docs/chain.md): states, an initial state, declared variables, and transitions with
// guards (comparisons on the event's fields, the caller's zid and the contract's variables) and effects
// (assignments). Pure: the same contract, state, variables, event and caller give the same answer on every node (no
// clock, no randomness, no floating-point accumulation beyond IEEE double addition, which is deterministic).
//
// The caller is the zid of the identity whose key sent the event, as the transition's row records it: an event's
// fields are what the sender wrote (a `by` field proves nothing), the caller is what the node authenticated.
//
// The transitions form an explicit table, (state, event type) → the transitions to try in order; the first whose
// guards all hold is taken. Nothing in the table → illegal (409, naming the state and the event).
import { z } from 'zod';
import { InputError, ServiceError } from '../kernel/errors.js';

const NAME = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'a name: a letter or _, then up to 63 letters, digits or _');
const Primitive = z.union([z.number().finite(), z.string().max(256), z.boolean(), z.null()]);
export type Primitive = z.infer<typeof Primitive>;

/**
 * An operand: a field of the event, the caller (`{"caller": "zid"}`: the zid of the identity that sent the event),
 * a contract variable, or a literal.
 */
const Operand = z.union([
  z.object({ event: NAME }).strict(),
  z.object({ caller: z.literal('zid') }).strict(),
  z.object({ var: NAME }).strict(),
  z.object({ value: Primitive }).strict(),
]);
export type Operand = z.infer<typeof Operand>;

export const COMPARISONS = ['==', '!=', '<', '<=', '>', '>='] as const;
const Guard = z.object({ left: Operand, op: z.enum(COMPARISONS), right: Operand }).strict();
const Effect = z.union([z.object({ set: NAME, to: Operand }).strict(), z.object({ add: NAME, by: Operand }).strict()]);
export type Guard = z.infer<typeof Guard>;
export type Effect = z.infer<typeof Effect>;

const Transition = z
  .object({
    from: NAME,
    on: NAME,
    to: NAME,
    guards: z.array(Guard).max(32).default([]),
    effects: z.array(Effect).max(32).default([]),
  })
  .strict();

export const ContractSchema = z
  .object({
    name: NAME,
    states: z.array(NAME).min(1).max(64),
    initial: NAME,
    variables: z.record(NAME, Primitive).default({}),
    transitions: z.array(Transition).min(1).max(256),
  })
  .strict()
  .superRefine((c, ctx) => {
    const states = new Set<string>();
    c.states.forEach((s, i) => {
      if (states.has(s)) ctx.addIssue({ code: 'custom', path: ['states', i], message: `state ${s} is listed twice` });
      states.add(s);
    });
    if (Object.keys(c.variables).length > 64) ctx.addIssue({ code: 'custom', path: ['variables'], message: 'at most 64 variables' });
    if (!states.has(c.initial)) ctx.addIssue({ code: 'custom', path: ['initial'], message: `initial state ${c.initial} is not one of states` });
    c.transitions.forEach((t, i) => {
      for (const end of ['from', 'to'] as const) {
        if (!states.has(t[end])) ctx.addIssue({ code: 'custom', path: ['transitions', i, end], message: `state ${t[end]} is not one of states` });
      }
      const operand = (o: Operand, path: (string | number)[]) => {
        if ('var' in o && !Object.hasOwn(c.variables, o.var))
          ctx.addIssue({ code: 'custom', path: [...path, 'var'], message: `variable ${o.var} is not declared` });
      };
      t.guards.forEach((g, j) => {
        operand(g.left, ['transitions', i, 'guards', j, 'left']);
        operand(g.right, ['transitions', i, 'guards', j, 'right']);
      });
      t.effects.forEach((e, j) => {
        const target = 'set' in e ? e.set : e.add;
        const path = ['transitions', i, 'effects', j];
        if (!Object.hasOwn(c.variables, target))
          ctx.addIssue({ code: 'custom', path: [...path, 'set' in e ? 'set' : 'add'], message: `variable ${target} is not declared` });
        else if ('add' in e && typeof c.variables[target] !== 'number')
          ctx.addIssue({ code: 'custom', path: [...path, 'add'], message: `variable ${target} is not a number (add needs one)` });
        operand('set' in e ? e.to : e.by, [...path, 'set' in e ? 'to' : 'by']);
      });
    });
  });
export type Contract = z.infer<typeof ContractSchema>;

/** An event: its type (the transition's `on`) and its fields (primitives). */
export const EventSchema = z
  .object({ type: NAME })
  .catchall(Primitive)
  .refine((e) => Object.keys(e).length <= 33, 'at most 32 fields besides type');
export type ContractEvent = z.infer<typeof EventSchema>;

/** The first issue of a failed parse as 400 SVC_INVALID_INPUT whose field is the offending path (`transitions.2.to`). */
function pathError(issues: z.core.$ZodIssue[], root: string): InputError {
  const issue = issues[0]!;
  const path = [root, ...issue.path.map(String)];
  if (issue.code === 'unrecognized_keys') {
    const keys = (issue as unknown as { keys: string[] }).keys;
    return new InputError([...path, keys[0]].join('.'), `unknown key${keys.length > 1 ? 's' : ''}: ${keys.join(', ')}`, null);
  }
  return new InputError(path.join('.'), issue.message, null);
}

/** `root` names where the contract sits in the request (a genesis document's: `document.contract`). */
export function parseContract(json: unknown, root = 'contract'): Contract {
  const r = ContractSchema.safeParse(json);
  if (!r.success) throw pathError(r.error.issues, root);
  return r.data;
}

export function parseEvent(json: unknown, root = 'event'): ContractEvent {
  const r = EventSchema.safeParse(json);
  if (!r.success) throw pathError(r.error.issues, root);
  return r.data;
}

export type TransitionTable = ReadonlyMap<string, readonly { index: number; to: string; guards: Guard[]; effects: Effect[] }[]>;

const tableKey = (state: string, on: string) => `${state}\u0000${on}`;

/** The explicit transition table of a contract: (state, event type) → candidates in declaration order. */
export function transitionTable(c: Contract): TransitionTable {
  const table = new Map<string, { index: number; to: string; guards: Guard[]; effects: Effect[] }[]>();
  c.transitions.forEach((t, index) => {
    const key = tableKey(t.from, t.on);
    const row = table.get(key) ?? [];
    row.push({ index, to: t.to, guards: t.guards, effects: t.effects });
    table.set(key, row);
  });
  return table;
}

export interface ContractState {
  state: string;
  vars: Record<string, Primitive>;
}

/**
 * The caller of an event: the zid the node authenticated for it, recorded in its row; null for a row written before
 * rows recorded it (no contract deployed then can name the caller: the operand did not exist).
 */
export type Caller = string | null;

function value(o: Operand, vars: Record<string, Primitive>, event: ContractEvent, caller: Caller): Primitive | undefined {
  // Own fields only: a name every object inherits (constructor, toString) is no field of the event or variable.
  if ('event' in o) return o.event === 'type' ? event.type : Object.hasOwn(event, o.event) ? (event[o.event] as Primitive) : undefined;
  // An unrecorded caller is missing, like a missing event field: a guard on it never holds, an effect reading it fails.
  if ('caller' in o) return caller ?? undefined;
  if ('var' in o) return Object.hasOwn(vars, o.var) ? vars[o.var] : undefined;
  return o.value;
}

function holds(g: Guard, vars: Record<string, Primitive>, event: ContractEvent, caller: Caller): boolean {
  const a = value(g.left, vars, event, caller);
  const b = value(g.right, vars, event, caller);
  if (a === undefined || b === undefined) return false;
  if (g.op === '==') return a === b;
  if (g.op === '!=') return a !== b;
  // Order only numbers with numbers and strings with strings (by UTF-16 code units): anything else does not hold.
  if (!((typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string'))) return false;
  if (g.op === '<') return a < b;
  if (g.op === '<=') return a <= b;
  if (g.op === '>') return a > b;
  return a >= b;
}

function illegal(contractId: string, s: ContractState, event: ContractEvent, reason: string, extra: Record<string, unknown>): ServiceError {
  return new ServiceError(409, 'SVC_ILLEGAL_TRANSITION', `illegal transition: event ${event.type} in state ${s.state}: ${reason}`, {
    contract_id: contractId,
    state: s.state,
    event: event.type,
    reason,
    ...extra,
  });
}

/** Events that have a transition from a state (what a refusal lists). */
export function eventsFrom(c: Contract, state: string): string[] {
  return [...new Set(c.transitions.filter((t) => t.from === state).map((t) => t.on))].sort();
}

/**
 * Apply an event sent by `caller`: the new state and variables, and which transition was taken. Throws 409
 * SVC_ILLEGAL_TRANSITION naming the state and the event when the table has no transition for them, when no
 * candidate's guards hold (naming the first failing guard's path), or when an effect would leave a variable
 * non-finite.
 */
export function step(
  contractId: string,
  c: Contract,
  table: TransitionTable,
  s: ContractState,
  event: ContractEvent,
  caller: Caller,
): ContractState & { transition: number; from: string } {
  const candidates = table.get(tableKey(s.state, event.type));
  if (!candidates) throw illegal(contractId, s, event, 'no transition', { allowed_events: eventsFrom(c, s.state) });
  let firstFailed: string | null = null;
  for (const t of candidates) {
    const failing = t.guards.findIndex((g) => !holds(g, s.vars, event, caller));
    if (failing !== -1) {
      firstFailed ??= `transitions.${t.index}.guards.${failing}`;
      continue;
    }
    const vars = { ...s.vars };
    for (const [j, e] of t.effects.entries()) {
      if ('set' in e) {
        const v = value(e.to, vars, event, caller);
        if (v === undefined) {
          const what = 'caller' in e.to ? 'the caller, which this row does not record' : 'a field the event does not have';
          throw illegal(contractId, s, event, `effect transitions.${t.index}.effects.${j} reads ${what}`, {});
        }
        vars[e.set] = v;
      } else {
        const by = value(e.by, vars, event, caller);
        const current = vars[e.add];
        const next = typeof by === 'number' && typeof current === 'number' ? current + by : NaN;
        if (!Number.isFinite(next)) throw illegal(contractId, s, event, `effect transitions.${t.index}.effects.${j} needs a finite number`, {});
        vars[e.add] = next;
      }
    }
    return { state: t.to, vars, transition: t.index, from: s.state };
  }
  throw illegal(contractId, s, event, 'guard failed', { guard: firstFailed });
}
