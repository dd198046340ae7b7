// The eight provider kinds of spec 5.10 and the two wire protocols they speak (OpenAI's chat completions and
// Anthropic's messages), over plain fetch with a configurable base URL: no SDK, nothing downloaded at run time.
import { ServiceError } from '../kernel/errors.js';
import { postOnce, type PostAnswer } from '../util/outbound-post.js';
import type { UrlPolicy } from '../util/url-policy.js';

export type WireProtocol = 'openai' | 'anthropic';

export interface ProviderKind {
  kind: string;
  protocol: WireProtocol;
  /** Where the API is unless a base URL is given (null: the credential must give one). */
  baseUrl: string | null;
  defaultModel: string | null;
}

export const PROVIDER_KINDS: readonly ProviderKind[] = [
  { kind: 'openai', protocol: 'openai', baseUrl: 'https://api.openai.com/v1', defaultModel: 'gpt-4o-mini' },
  { kind: 'anthropic', protocol: 'anthropic', baseUrl: 'https://api.anthropic.com/v1', defaultModel: 'claude-sonnet-4-5' },
  { kind: 'google', protocol: 'openai', baseUrl: 'https://generativelanguage.googleapis.com/v1beta/openai', defaultModel: 'gemini-2.5-flash' },
  { kind: 'mistral', protocol: 'openai', baseUrl: 'https://api.mistral.ai/v1', defaultModel: 'mistral-small-latest' },
  { kind: 'groq', protocol: 'openai', baseUrl: 'https://api.groq.com/openai/v1', defaultModel: 'llama-3.3-70b-versatile' },
  { kind: 'deepseek', protocol: 'openai', baseUrl: 'https://api.deepseek.com/v1', defaultModel: 'deepseek-chat' },
  { kind: 'openrouter', protocol: 'openai', baseUrl: 'https://openrouter.ai/api/v1', defaultModel: 'openai/gpt-4o-mini' },
  { kind: 'openai_compatible', protocol: 'openai', baseUrl: null, defaultModel: null },
];

export const PROVIDER_KIND_NAMES = PROVIDER_KINDS.map((p) => p.kind) as [string, ...string[]];

export function providerKind(kind: string): ProviderKind | undefined {
  return PROVIDER_KINDS.find((p) => p.kind === kind);
}

/** A provider to call: its kind, where, with which key and model. */
export interface ProviderConfig {
  kind: string;
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Where this provider may be called: the operator's provider is trusted, an identity's credential is not. */
  policy: UrlPolicy;
}

/** How much of a provider's answer is read. */
const ANSWER_BYTES_MAX = 8 * 1024 * 1024;

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ToolDecl {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ToolCallRequest {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

export interface ToolCallOutcome {
  text: string;
  isError: boolean;
}

/** One conversation with a provider: a model turn, then the results of the tools it asked for, and again. */
export interface ProviderSession {
  turn(): Promise<{ text: string; calls: ToolCallRequest[] }>;
  addResults(calls: ToolCallRequest[], outcomes: ToolCallOutcome[]): void;
}

/** The provider's error, without its key: 502 SVC_LLM_PROVIDER_ERROR (never charged). */
export function providerError(config: ProviderConfig, message: string, extra: Record<string, unknown> = {}): ServiceError {
  const clean = config.apiKey ? message.split(config.apiKey).join('[key]') : message;
  return new ServiceError(502, 'SVC_LLM_PROVIDER_ERROR', `the ${config.kind} provider failed: ${clean.slice(0, 300)}`, {
    provider: config.kind,
    model: config.model,
    ...extra,
  });
}

async function post(
  config: ProviderConfig,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  signal: AbortSignal,
): Promise<Record<string, unknown>> {
  const url = `${config.baseUrl.replace(/\/+$/, '')}${path}`;
  let res: PostAnswer;
  try {
    res = await postOnce(url, { 'content-type': 'application/json', ...headers }, JSON.stringify(body), {
      policy: config.policy,
      keepBytes: ANSWER_BYTES_MAX,
      signal,
    });
  } catch (err) {
    // Stopped for another reason than the deadline (the client left, or the node stops and closes its requests): that
    // reason is the answer (a 499), not a provider that failed to answer in time.
    if (signal.aborted && !timedOut(signal)) signal.throwIfAborted();
    const e = err as Error;
    throw providerError(config, signal.aborted ? 'no answer in time' : `unreachable (${e.message})`, { provider_status: null });
  }
  const text = res.body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (res.status < 200 || res.status >= 300) {
    const p = parsed as { error?: { message?: string } | string; message?: string } | undefined;
    const msg = typeof p?.error === 'object' ? p.error.message : typeof p?.error === 'string' ? p.error : (p?.message ?? text);
    throw providerError(config, `HTTP ${res.status}: ${msg ?? ''}`, { provider_status: res.status });
  }
  if (!parsed || typeof parsed !== 'object') throw providerError(config, 'answer is not JSON', { provider_status: res.status });
  return parsed as Record<string, unknown>;
}

/** Aborted by its deadline: AbortSignal.timeout's reason, which AbortSignal.any passes on when it aborts first. */
function timedOut(signal: AbortSignal): boolean {
  const reason: unknown = signal.reason;
  return reason instanceof DOMException && reason.name === 'TimeoutError';
}

function parseArgs(text: unknown): Record<string, unknown> {
  if (text && typeof text === 'object') return text as Record<string, unknown>;
  try {
    const v = JSON.parse(typeof text === 'string' && text.length > 0 ? text : '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** OpenAI-compatible chat completions (POST {base}/chat/completions, Bearer key, function tools). */
export function openAiSession(config: ProviderConfig, messages: ChatMessage[], tools: ToolDecl[], signal: AbortSignal): ProviderSession {
  const convo: Record<string, unknown>[] = messages.map((m) => ({ role: m.role, content: m.content }));
  const toolDefs = tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
  return {
    async turn() {
      const answer = await post(
        config,
        '/chat/completions',
        { authorization: `Bearer ${config.apiKey}` },
        { model: config.model, messages: convo, ...(toolDefs.length > 0 ? { tools: toolDefs } : {}) },
        signal,
      );
      const choice = (answer.choices as { message?: Record<string, unknown> }[] | undefined)?.[0]?.message;
      if (!choice) throw providerError(config, 'answer has no choices[0].message');
      convo.push(choice);
      const raw = (choice.tool_calls as { id: string; function: { name: string; arguments: string } }[] | undefined) ?? [];
      return {
        text: typeof choice.content === 'string' ? choice.content : '',
        calls: raw.map((c) => ({ id: c.id, name: c.function?.name, args: parseArgs(c.function?.arguments) })),
      };
    },
    addResults(calls, outcomes) {
      calls.forEach((c, i) => convo.push({ role: 'tool', tool_call_id: c.id, content: outcomes[i]!.text }));
    },
  };
}

export const ANTHROPIC_VERSION = '2023-06-01';
const ANTHROPIC_MAX_TOKENS = 2048;

/** Anthropic-compatible messages (POST {base}/messages, x-api-key, tool_use / tool_result blocks). */
export function anthropicSession(config: ProviderConfig, messages: ChatMessage[], tools: ToolDecl[], signal: AbortSignal): ProviderSession {
  const system = messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n\n');
  const convo: Record<string, unknown>[] = messages.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.content }));
  const toolDefs = tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  return {
    async turn() {
      const answer = await post(
        config,
        '/messages',
        { 'x-api-key': config.apiKey, 'anthropic-version': ANTHROPIC_VERSION },
        {
          model: config.model,
          max_tokens: ANTHROPIC_MAX_TOKENS,
          ...(system ? { system } : {}),
          messages: convo,
          ...(toolDefs.length > 0 ? { tools: toolDefs } : {}),
        },
        signal,
      );
      const blocks = answer.content as { type: string; text?: string; id?: string; name?: string; input?: unknown }[] | undefined;
      if (!Array.isArray(blocks)) throw providerError(config, 'answer has no content blocks');
      convo.push({ role: 'assistant', content: blocks });
      return {
        text: blocks
          .filter((b) => b.type === 'text')
          .map((b) => b.text ?? '')
          .join(''),
        calls: blocks.filter((b) => b.type === 'tool_use').map((b) => ({ id: String(b.id), name: String(b.name), args: parseArgs(b.input) })),
      };
    },
    addResults(calls, outcomes) {
      convo.push({
        role: 'user',
        content: calls.map((c, i) => ({
          type: 'tool_result',
          tool_use_id: c.id,
          content: outcomes[i]!.text,
          ...(outcomes[i]!.isError ? { is_error: true } : {}),
        })),
      });
    },
  };
}

export function openSession(config: ProviderConfig, messages: ChatMessage[], tools: ToolDecl[], signal: AbortSignal): ProviderSession {
  const protocol = providerKind(config.kind)?.protocol ?? 'openai';
  return protocol === 'anthropic' ? anthropicSession(config, messages, tools, signal) : openAiSession(config, messages, tools, signal);
}

/** A provider answers a one-line message (the credentials test): its reply and how long it took. */
export async function probeProvider(config: ProviderConfig, timeoutMs: number, nowMs: () => number): Promise<{ reply: string; latency_ms: number }> {
  const start = nowMs();
  const turn = await openSession(config, [{ role: 'user', content: 'Reply with the single word: ok' }], [], AbortSignal.timeout(timeoutMs)).turn();
  return { reply: turn.text.slice(0, 200), latency_ms: nowMs() - start };
}
