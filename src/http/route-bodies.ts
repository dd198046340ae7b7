// Request and answer bodies this node defines where the spec shows none (docs/decisions.md): discovery (GET /api)
// shows them beside the routes, so a client learns them from the node itself.

export interface RouteBody {
  request: string;
  answer: string;
}

export const ROUTE_BODIES: Record<string, RouteBody> = {
  'POST /api/svc/reactor': {
    request:
      '{solver (a stateful solver id), inputs? (one segment: every step runs them), initialState?} | {chain {domain, operators, inputs}, feedback {input key: template over result.value, result.unit, step, state.<key>}}',
    answer: '201 {id, solver, owner, home, inputs, step: 0, state, ...}: opening runs nothing',
  },
  'POST /api/svc/reactor/step': {
    request: '{id}',
    answer: '{id, step, state, value, unit, last_result_id, invariant, ms, result (the sealed solver result; charged as a solver run)}',
  },
  'POST /api/svc/reactor/observe': {
    request: '{id}',
    answer: '{id, step, svcond, phase, R_t, measurement {value, unit, result_id, svcond}, invariant, state}',
  },
  'POST /api/svc/reactor/state': { request: '{id}', answer: '{id, solver, inputs, step, state, value, unit, last_result_id, ...}' },
  'POST /api/svc/reactor/trajectory': {
    request: '{id, offset? (0), limit? (100, ≤ 1000)}',
    answer: '{id, total, offset, limit, items [{step, svcond, result_id, value, unit, state, invariant, ms}]}',
  },
  'POST /api/svc/reactor/telemetry': {
    request: '{id}',
    answer:
      '{id, solver, steps, ticks, opened_svcond, last_svcond, invariant {name, unit, initial, value, drift, rel_drift, max_rel_drift} | null, ms_per_step {mean, last}}',
  },
  'POST /api/svc/reactor/next': {
    request: '{id}',
    answer: '{id, step, committed: false, value, unit, state, check, invariant}: nothing sealed, charged or written',
  },
  'POST /api/svc/reactor/close': {
    request: '{id}',
    answer: "{id, solver, inputs, step, state, ...} as it was last: the reactor and its trajectory are deleted, freeing one of the identity's reactor slots",
  },
  'GET /api/svc/mmio': {
    request: 'none',
    answer: '{version, node, svcond, registers [{name, offset, address, type, unit, description, value}], caller_registers}',
  },
  'GET /api/svc/mmio/registers': { request: 'Bearer key', answer: '{version, zid, svcond, registers [...]} (bank 0x1000)' },
  'POST /api/svc/agent/spawn': {
    request:
      '{slug? (one of your machines; default your own), program {every, step {kind: compute|solver|append|contract, ...} (contract: {contract_id, event {type, ...fields}} from {{placeholders}}; append writes a chain row only with inject_agent_rail on), state?, assign?, max_ticks?, derive? {every, max_children, max_depth, program?}}}',
    answer: '201 the agent {id, status, slug, depth, ticks, state, next_svcond, program, ...}; costs 75',
  },
  'GET /api/svc/agent/list': { request: 'query status?, offset?, limit?', answer: '{total, offset, limit, items [agent]}' },
  'GET /api/svc/agent/:id': { request: 'none', answer: 'the agent' },
  'POST /api/svc/agent/:id/kill': { request: 'none', answer: 'the agent, killed (its descendants too)' },
  'GET /api/svc/agent/stream': {
    request: 'Last-Event-ID header (or ?last_event_id=) to resume; ?agent= to follow one agent',
    answer: 'text/event-stream: events spawn, tick, derive, kill, stop; id = event seq; data {seq, type, agent, owner, svcond, data}; heartbeat comments',
  },
  'POST /api/genesis/execute': {
    request:
      '{document {slug, is_public?, inject_agent_rail?, inject_pulse_orb?, roles? {zid: viewer|operator|admin}, contract? (a JSON contract), events? [{type, payload}], metadata?}}',
    answer:
      '201 {kind: genesis, document_digest, owner, slug, svcond, rows, contract_id, settings, tally_charge, replayed: false, svcProof, admin_key} | 200 the same, replayed: true',
  },
};
