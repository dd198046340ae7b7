// zod at the route: a body that does not fit its schema is 400 SVC_INVALID_INPUT (field, reason, allowed).
import type { z } from 'zod';
import { zodIssueToInputError } from '../solvers/util.js';

export function validate<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body === undefined ? {} : body);
  if (result.success) return result.data;
  // An issue with the body as a whole (an array, a string) names the body, not a field in it.
  throw zodIssueToInputError(result.error.issues[0]!, 'body');
}
