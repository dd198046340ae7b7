// This node's operator: the identity bonded on this node (one bond per node). Its bond and mode decide what the node
// advertises in its tick events, whether it serves peers' runs, and whether a run it executes carries executed_by.
import type { AttestedBond } from './bonds.js';
import { signExecution } from './executed-by.js';
import type { ExecutedBy } from '../records/types.js';
import type { Mode } from './policy.js';

export interface OperatorDeps {
  bonds: { ofNode(node: string): AttestedBond | null };
  modes: { of(zid: string): { mode: Mode } };
  nodeId: string;
  /** Signs with this node's key. */
  sign: (text: string) => string;
}

export class NodeOperator {
  constructor(private readonly deps: OperatorDeps) {}

  /** The operator's active bond, or null when no identity is bonded on this node. */
  bond(): AttestedBond | null {
    return this.deps.bonds.ofNode(this.deps.nodeId);
  }

  /** The operator's mode; idle when there is no operator. */
  mode(): Mode {
    const operator = this.bond();
    return operator ? this.deps.modes.of(operator.bond.zid).mode : 'idle';
  }

  /** The operator's bond while it is contributing, else null. */
  contributing(): { bond_id: string } | null {
    const operator = this.bond();
    if (!operator || this.deps.modes.of(operator.bond.zid).mode !== 'contributing') return null;
    return operator.bond;
  }

  /**
   * executed_by for a run this node executes (its operator's bond, signed with this node's key), or null when its
   * operator is not contributing: every run a contributing node executes carries its bond (architecture.md §6).
   */
  attest(requestDigest: string | (() => string), resultDigest: string, svcond: number): ExecutedBy | null {
    const bond = this.contributing();
    if (bond === null) return null;
    // A sealed compute gives its request digest as a function: it is made only for a run this node signs.
    const request_digest = typeof requestDigest === 'string' ? requestDigest : requestDigest();
    return signExecution(this.deps.sign, { node: this.deps.nodeId, bond_id: bond.bond_id, svcond, request_digest }, resultDigest);
  }
}
