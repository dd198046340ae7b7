// Chain requests compiled once: evaluated and validated (400s thrown before any charge), with what follows from
// the request alone — cost, result digest and the stamp-free part of the tolerance gate. The same request gives the
// same chain at every stamp (rule 5) but for the KO42 line and term, which the sealed body takes from its own stamp,
// so evaluations are kept by request (bounded).
import { canonicalDigest } from '../kernel/canonical.js';
import { stampAt } from '../kernel/clock.js';
import { gateChainValues } from '../kernel/gate.js';
import { modulationFactor } from '../kernel/modulation.js';
import { evaluateChain, type ChainRequest, type ChainResult } from '../kernel/operators/chain.js';
import { COSTS } from '../tally/costs.js';
import { BoundedMap } from '../util/bounded-map.js';

/**
 * What determines a chain's evaluation but the stamp (rule 5): phi0 and the request. JSON.stringify writes -0 as 0,
 * so the inputs that are -0 are named too. Only a valid request is kept, and in a valid request the inputs' values are
 * its only numbers; so two requests with the same key, one of them valid, are the same request.
 */
export function chainKey(req: ChainRequest, phi0: number): string {
  const inputs = req.inputs as Record<string, unknown> | null | undefined;
  const negativeZeros = inputs !== null && typeof inputs === 'object' ? Object.keys(inputs).filter((k) => Object.is(inputs[k], -0)) : [];
  return `${phi0}\n${JSON.stringify(req)}${negativeZeros.length > 0 ? `\n-0: ${JSON.stringify(negativeZeros)}` : ''}`;
}

/**
 * The same key from the request's JSON text as the client sent it (one text parses to one request): what the compute
 * route has at hand, with no second serialisation. Distinct from every chainKey (whose second line starts with {).
 */
export function chainTextKey(text: string, phi0: number): string {
  return `${phi0}\ntext\n${text}`;
}

/** A validated chain request and what follows from it alone. */
export interface CompiledChain {
  /** The chain evaluated at the first request's stamp: only its KO42 line and term belong to that stamp. */
  preview: ChainResult;
  cost: number;
  resultDigest: string;
  gate: ReturnType<typeof gateChainValues>;
}

const COMPILED_CHAINS_MAX = 512;
/** Longest request kept (its key): a request may carry up to 1 MiB of unused inputs, which is not worth keeping. */
const COMPILED_CHAIN_KEY_MAX = 4096;

export class CompiledChains {
  private readonly chains = new BoundedMap<string, CompiledChain>(COMPILED_CHAINS_MAX);

  constructor(private readonly phi0: number) {}

  /** The compiled chain of `req` (`requestText`: the JSON text it was parsed from, when the caller has it). */
  of(req: ChainRequest, startNs: bigint, requestText: string | undefined): CompiledChain {
    const key = requestText !== undefined ? chainTextKey(requestText, this.phi0) : chainKey(req, this.phi0);
    const known = this.chains.get(key);
    if (known !== undefined) return known;
    const probe = stampAt(startNs);
    const preview = evaluateChain(req, { R_t: modulationFactor(probe.phase, this.phi0), svcond: probe.svcond, phase: probe.phase, phi0: this.phi0 });
    const compiled: CompiledChain = {
      preview,
      cost: Math.min(20, Math.max(1, preview.operator_count - 1) * COSTS.computePerOperator),
      resultDigest: canonicalDigest({
        operators: preview.operators,
        domain: preview.domain,
        inputs: preview.resolved,
        value: preview.value,
        unit: preview.unit,
        fields: null,
      }),
      gate: gateChainValues(preview, this.phi0),
    };
    if (key.length > COMPILED_CHAIN_KEY_MAX) return compiled;
    this.chains.set(key, compiled);
    return compiled;
  }
}
