// What a client of this node's tools is told about them, apart from the SDK's server (server.ts): the chat's system
// prompt reads it without loading the SDK.

/** What a client of this node's tools is told about them (MCP initialize instructions, the chat's system prompt). */
export const TOOL_INSTRUCTIONS =
  'Tools of a Deterministic Computation Service node. Every result is computed deterministically, stamped to the 1.287 Hz clock and sealed ' +
  'with an HMAC receipt (svcProof); pass a result unchanged to svc_verify to check it. Start with svc_auto for a question in words, ' +
  'svc_compute for an operator chain, or a svc_<solver> tool. Errors carry the service code (e.g. SVC_INVALID_INPUT) first in their text.';
