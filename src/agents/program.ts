// An agent's declared program (spec 4.8, 6): on every k-th tick one step — a closed-form computation, a solver run, a
// chain append or a transition of one of the machine's contracts — whose inputs are templates with {{placeholders}} over the agent's state; then `assign` updates the
// state from the step's result, and `derive` may spawn a child. Placeholders are looked up, never evaluated: no code
// in a program runs (the same rule as stream templates, spec 4.5).
import { z } from 'zod';
import { InputError } from '../kernel/errors.js';
import { fill, placeholders } from '../util/template.js';

export { fill };

/** What an agent's placeholders may name besides its state keys. */
const ROOTS = new Set([
  'agent.id',
  'agent.depth',
  'agent.parent',
  'agent.slug',
  'tick',
  'svcond',
  'result.value',
  'result.unit',
  'result.result_id',
  'result.contract_state',
]);

const scalar = z.union([z.number(), z.string().max(256), z.boolean(), z.null()]);
type Template = z.infer<typeof scalar> | Template[] | { [k: string]: Template };
const template: z.ZodType<Template> = z.lazy(() => z.union([scalar, z.array(template).max(64), z.record(z.string().max(64), template)]));

const STATE_KEY = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;

const step = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('compute'), domain: z.string().max(64), operators: z.array(z.string().max(64)).min(1), inputs: template.default({}) }).strict(),
  z
    .object({
      kind: z.literal('solver'),
      solver: z.string().max(64),
      inputs: template.default({}),
      /** Stateful solvers: each run starts from the previous run's final state (the reactor's feedback). */
      carry_state: z.boolean().default(false),
    })
    .strict(),
  z.object({ kind: z.literal('append'), event: z.string().min(1).max(64), payload: template.default({}) }).strict(),
  z
    .object({
      kind: z.literal('contract'),
      /** One of the agent's machine's contracts (checked at spawn). */
      contract_id: z.string().regex(/^ctr_[0-9a-f]{24}$/, 'a contract id (ctr_ and 24 hex)'),
      /** The event, {type, ...fields}, built from templates at each step (fields: numbers, strings, booleans, null). */
      event: z.record(z.string().max(64), template),
    })
    .strict(),
]);

const baseProgram = z
  .object({
    /** Run a step on every k-th tick after the spawn. */
    every: z.number().int().min(1).max(111_197),
    step,
    /** The agent's state at spawn: a flat record of numbers, strings, booleans. */
    state: z.record(z.string().regex(STATE_KEY), scalar).default({}),
    /** After a step: state keys set from templates (e.g. {"last": "{{result.value}}"}). */
    assign: z.record(z.string().regex(STATE_KEY), template).default({}),
    /** Stop after this many ticks (none: run until killed or out of credits). */
    max_ticks: z.number().int().min(1).max(1_000_000_000).optional(),
  })
  .strict();

export const programSchema = baseProgram.extend({
  derive: z
    .object({
      /** Derive a child on every n-th tick of this agent. */
      every: z.number().int().min(1).max(1_000_000),
      /** At most this many children of this agent (capped by the node's limit). */
      max_children: z.number().int().min(0).max(64).default(1),
      /** Deepest generation (the spawned agent is depth 0; capped by the node's limit). */
      max_depth: z.number().int().min(0).max(16).default(1),
      /** The child's program; absent: the parent's own (derive included, so generations follow to max_depth). */
      program: baseProgram.optional(),
    })
    .strict()
    .optional(),
});

export type Program = z.infer<typeof programSchema>;
export type ChildProgram = z.infer<typeof baseProgram>;

/** What placeholders read. */
export interface TemplateContext {
  agent: { id: string; depth: number; parent: string | null; slug: string };
  tick: number;
  svcond: number;
  state: Record<string, unknown>;
  /** contract_state: the contract's state after a contract step (refused or not); absent after other steps. */
  result: { value: number | null; unit: string | null; result_id: string | null; contract_state?: string | null };
}

/** 400 for a placeholder that names nothing an agent has (checked at spawn, so a program never fails on a typo). */
export function checkPlaceholders(p: ChildProgram): void {
  const known = new Set([...ROOTS, ...Object.keys(p.state).map((k) => `state.${k}`), ...Object.keys(p.assign).map((k) => `state.${k}`)]);
  const stepTemplates = p.step.kind === 'append' ? p.step.payload : p.step.kind === 'contract' ? p.step.event : p.step.inputs;
  for (const path of [...placeholders(stepTemplates), ...placeholders(p.assign)]) {
    if (!known.has(path))
      throw new InputError(
        'program',
        `unknown placeholder {{${path}}}: use state.<key>, tick, svcond, result.value|unit|result_id|contract_state, agent.id|depth|parent|slug`,
        [...known],
      );
  }
}

/** Validate a program (zod at the route gives 400s for shape; this adds the placeholder check). */
export function parseProgram(raw: unknown): Program {
  const parsed = programSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputError(`program.${issue.path.join('.')}`.replace(/\.$/, ''), issue.message, null);
  }
  checkPlaceholders(parsed.data);
  if (parsed.data.derive?.program) checkPlaceholders(parsed.data.derive.program);
  return parsed.data;
}
