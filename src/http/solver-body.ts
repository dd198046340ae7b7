// A solver's request body: its own input schema, and initialState for a stateful solver. One schema serves the
// solver's route (its OpenAPI request body) and its MCP tool (svc_<solver>'s arguments).
import { z } from 'zod';
import type { AnySolver } from '../solvers/registry.js';

export function solverBodySchema(solver: AnySolver): z.ZodType {
  const base = solver.schema ?? z.record(z.string(), z.unknown());
  if (!solver.stateful || !(base instanceof z.ZodObject)) return base;
  return base.extend({ initialState: z.record(z.string(), z.unknown()).optional().describe('the state a previous run of this solver returned') });
}
