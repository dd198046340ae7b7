// This node's tools as MCP and the chat route see them: the tool table's rows with their JSON Schemas (generated once
// from the rows' zod schemas with zod 4's toJSONSchema, as the SDK's McpServer would), and a call that validates the
// arguments with the same schema and the same error as the route, then performs the row's request on this node's
// own API with the caller's key (self-request.ts).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson } from '../kernel/canonical.js';
import { ServiceError } from '../kernel/errors.js';
import type { SolverRegistry } from '../solvers/registry.js';
import { answerToToolResult } from '../mcp/result.js';
import type { ToolSource } from '../mcp/server.js';
import { errorBody } from './errors.js';
import { validate } from './validate.js';
import { toolTable, type ToolRow } from './tool-table.js';
import type { SelfAnswer, SelfApi, SelfTarget } from './self-request.js';

export type JsonSchemaObject = Tool['inputSchema'];

/** A zod schema as a tool's input JSON Schema (draft-07, the input side; an object at the top, as MCP requires). */
export function toolInputSchema(schema: z.ZodType): JsonSchemaObject {
  const json = z.toJSONSchema(schema, { io: 'input', target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  return (json.type === 'object' ? json : { type: 'object', ...json }) as JsonSchemaObject;
}

/** A signal aborted when either is (undefined when neither is given). */
function anyOf(a: AbortSignal | undefined, b: AbortSignal | undefined): AbortSignal | undefined {
  return a && b ? AbortSignal.any([a, b]) : (a ?? b);
}

export class LocalTools {
  readonly rows: ToolRow[];
  readonly tools: Tool[];
  private readonly byName: Map<string, ToolRow>;
  /** SHA-256 of the canonical tool list and kernel version: changes when what this node offers changes. */
  readonly digest: string;

  constructor(
    registry: SolverRegistry,
    private readonly self: SelfApi,
    kernelVersion: string,
  ) {
    this.rows = toolTable(registry);
    this.byName = new Map(this.rows.map((r) => [r.name, r]));
    this.tools = this.rows.map((r) => ({ name: r.name, description: r.description, inputSchema: toolInputSchema(r.schema) }));
    this.digest = createHash('sha256')
      .update(canonicalJson({ kernel_version: kernelVersion, tools: this.tools }))
      .digest('hex');
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** The tool's result for a caller (the request's key and IP); null when there is no such tool. */
  async call(target: SelfTarget, name: string, args: Record<string, unknown>, traceId = 'mcp', signal?: AbortSignal): Promise<CallToolResult | null> {
    const row = this.byName.get(name);
    if (!row) return null;
    try {
      validate(row.schema, args);
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      return answerToToolResult(err.status, JSON.stringify(errorBody(traceId, err.status, err.code, err.message, err.extra, err.details)));
    }
    let answer: SelfAnswer;
    try {
      answer = await this.self.send(target, row.request(args), signal);
    } catch (err) {
      // Aborted: the signal's reason (the caller left: clientGone's 499), not the socket's AbortError.
      signal?.throwIfAborted();
      throw err;
    }
    return answerToToolResult(answer.status, answer.text);
  }

  /**
   * A tool source for one caller (the MCP server of one request, a chat message). `gone` aborts its calls when that
   * caller's request closes (clientGone): the loopback request is cut, and its route stops its own work in turn.
   */
  sourceFor(target: SelfTarget, traceId: string, gone?: AbortSignal): ToolSource {
    return {
      list: () => Promise.resolve(this.tools),
      call: (name, args, signal) => this.call(target, name, args, traceId, anyOf(gone, signal)),
    };
  }
}
