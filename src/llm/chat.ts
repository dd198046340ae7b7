// POST /api/llm/chat (spec 4.2, 5.9, part 8): a chat message of an identity, answered by a language model with the
// node's tools (a tool loop with a step cap), or by the offline assistant when no provider is configured. The first
// messages of a UTC day are free (a day counter, like the compute quotas); after them each costs the page-chat price
// of the cost table, charged with the exact 80/20 split in the batch that counts the message. Nothing is counted or
// charged when the provider fails. The tools a model calls are requests to the node's routes and are charged there.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ServiceError } from '../kernel/errors.js';
import type { Counters } from '../store/counters.js';
import type { Op } from '../store/db.js';
import { COSTS } from '../tally/costs.js';
import { chatDayCounter } from '../store/counter-keys.js';
import type { Ledger } from '../tally/ledger.js';
import { errorCodeOf } from '../mcp/result.js';
import { TOOL_INSTRUCTIONS } from '../mcp/instructions.js';
import type { ToolSource } from '../mcp/server.js';
import { offlineAnswer, type ToolCallRecord } from './offline.js';
import { openSession, type ChatMessage, type ProviderConfig, type ToolCallOutcome, type ToolDecl } from './providers.js';
import type { Caller, TallyCharge } from '../records/types.js';
import { dayKey } from '../util/utc-day.js';

export interface ChatDeps {
  counters: Counters;
  ledger: Ledger;
  commit: (ops: Op[]) => Promise<void>;
  nowMs: () => number;
  freeMessagesPerDay: number;
  maxToolSteps: number;
  timeoutMs: number;
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools: boolean;
}

export interface ChatReply {
  reply: { role: 'assistant'; content: string };
  provider: string;
  model: string | null;
  tool_calls: ToolCallRecord[];
  /** Model turns taken; `stopped` says why the loop ended when it was not the model's own answer. */
  steps: number;
  stopped: 'answer' | 'step_cap';
  /** The offline assistant's sealed result (null otherwise). */
  result: Record<string, unknown> | null;
  free_message: boolean;
  free_messages_left: number;
  tally_charge: TallyCharge | null;
}

function toolText(r: CallToolResult): string {
  return r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('\n');
}

export class ChatService {
  constructor(private readonly deps: ChatDeps) {}

  /** Free messages the identity has left today. */
  freeLeft(zid: string): number {
    return Math.max(0, this.deps.freeMessagesPerDay - this.deps.counters.get(chatDayCounter(dayKey(this.deps.nowMs()), zid)));
  }

  /** `gone`: the caller left (clientGone); the provider session and the tool calls stop, nothing is counted or charged. */
  async chat(
    caller: Extract<Caller, { kind: 'identity' }>,
    req: ChatRequest,
    provider: ProviderConfig | null,
    tools: ToolSource,
    gone?: AbortSignal,
  ): Promise<ChatReply> {
    const d = this.deps;
    const zid = caller.zid;
    const name = chatDayCounter(dayKey(d.nowMs()), zid);
    const free = d.counters.get(name) < d.freeMessagesPerDay;
    // 402 before any work (part 7) when the message is not free and the wallet cannot pay it.
    if (!free) await d.ledger.assertCanPay(caller, COSTS.pageChat);
    d.counters.reserve(name, 1);
    let answer: Omit<ChatReply, 'free_message' | 'free_messages_left' | 'tally_charge'>;
    try {
      answer = provider ? await this.withModel(req, provider, tools, gone) : await this.offline(req, tools, gone);
      // An answer nobody will read is neither counted nor charged.
      gone?.throwIfAborted();
    } catch (err) {
      d.counters.unreserve(name, 1);
      // The caller left: that, not what the cut provider request or tool call failed with (a 502, an AbortError).
      gone?.throwIfAborted();
      throw err;
    }
    d.counters.settle(name, 1);
    const ops: Op[] = [];
    let charge: TallyCharge | null = null;
    let rollback = () => d.counters.revert(name, 1);
    if (!free) {
      try {
        await d.ledger.wallet(zid);
        const paid = d.ledger.chargeOps(zid, 'page_chat', COSTS.pageChat);
        charge = paid.charge;
        ops.push(...paid.ops);
        rollback = () => {
          paid.rollback();
          d.counters.revert(name, 1);
        };
      } catch (err) {
        d.counters.revert(name, 1);
        if (err instanceof ServiceError && err.code === 'INSUFFICIENT_BALANCE') {
          throw new ServiceError(
            402,
            'INSUFFICIENT_BALANCE',
            `${err.message}: the tools this message called spent the credits its ${COSTS.pageChat} needed`,
            err.extra,
          );
        }
        throw err;
      }
    }
    try {
      // The day count's record is read here, with nothing awaited before the commit, so no later value is overwritten.
      await d.commit([d.counters.persistOp(name), ...ops]);
    } catch (err) {
      rollback();
      throw err;
    }
    return { ...answer, free_message: free, free_messages_left: this.freeLeft(zid), tally_charge: charge };
  }

  private async offline(
    req: ChatRequest,
    tools: ToolSource,
    gone: AbortSignal | undefined,
  ): Promise<Omit<ChatReply, 'free_message' | 'free_messages_left' | 'tally_charge'>> {
    const question = [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const a = await offlineAnswer(question, tools, gone);
    return {
      reply: { role: 'assistant', content: a.text },
      provider: 'offline',
      model: null,
      tool_calls: a.tool_calls,
      steps: 1,
      stopped: 'answer',
      result: a.result,
    };
  }

  private async withModel(
    req: ChatRequest,
    provider: ProviderConfig,
    tools: ToolSource,
    gone: AbortSignal | undefined,
  ): Promise<Omit<ChatReply, 'free_message' | 'free_messages_left' | 'tally_charge'>> {
    const decls: ToolDecl[] = req.tools
      ? (await tools.list()).map((t) => {
          const { $schema: _drop, ...parameters } = t.inputSchema as Record<string, unknown>;
          return { name: t.name, description: t.description ?? '', parameters };
        })
      : [];
    const messages: ChatMessage[] = req.tools ? [{ role: 'system', content: TOOL_INSTRUCTIONS }, ...req.messages] : req.messages;
    const timeout = AbortSignal.timeout(this.deps.timeoutMs);
    const signal = gone ? AbortSignal.any([timeout, gone]) : timeout;
    const session = openSession(provider, messages, decls, signal);
    const records: ToolCallRecord[] = [];
    let steps = 0;
    for (;;) {
      const turn = await session.turn();
      steps++;
      if (turn.calls.length === 0 || !req.tools) return this.done(provider, turn.text, records, steps, 'answer');
      if (steps > this.deps.maxToolSteps) return this.done(provider, turn.text, records, steps, 'step_cap');
      const outcomes: ToolCallOutcome[] = [];
      for (const call of turn.calls) {
        gone?.throwIfAborted();
        const r = (await tools.call(call.name, call.args, gone)) ?? { isError: true, content: [{ type: 'text' as const, text: `no tool named ${call.name}` }] };
        records.push({ name: call.name, arguments: call.args, is_error: r.isError === true, code: r.isError ? errorCodeOf(r) : null });
        outcomes.push({ text: toolText(r), isError: r.isError === true });
      }
      session.addResults(turn.calls, outcomes);
    }
  }

  private done(provider: ProviderConfig, text: string, records: ToolCallRecord[], steps: number, stopped: 'answer' | 'step_cap') {
    const content = stopped === 'step_cap' && !text ? `(stopped after ${this.deps.maxToolSteps} rounds of tool calls without an answer)` : text;
    return {
      reply: { role: 'assistant' as const, content },
      provider: provider.kind,
      model: provider.model,
      tool_calls: records,
      steps,
      stopped,
      result: null,
    };
  }
}
