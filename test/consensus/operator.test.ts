// This node's operator (consensus/operator.ts): the identity bonded on this node, its mode (idle without a bond),
// its bond while contributing, and executed_by signed only then.
import { describe, expect, it } from 'vitest';
import type { AttestedBond } from '../../src/consensus/bonds.js';
import { executionText, verifyExecution } from '../../src/consensus/executed-by.js';
import { NodeOperator } from '../../src/consensus/operator.js';
import type { Mode } from '../../src/consensus/policy.js';

const SELF = '12D3KooWSelf';
const bond = (node: string, zid: string): AttestedBond => ({
  bond: { bond_id: `bond_${zid}`, zid, node, token_ids: [], svcond: 10 },
  attestation: 'sig',
});

function operatorWith(bonds: AttestedBond[], modes: Record<string, Mode>) {
  const sign = (text: string) => `signed:${text}`;
  return new NodeOperator({
    bonds: { ofNode: (node) => bonds.find((b) => b.bond.node === node) ?? null },
    modes: { of: (zid) => ({ mode: modes[zid] ?? 'idle' }) },
    nodeId: SELF,
    sign,
  });
}

describe('the node operator', () => {
  it('without a bond on this node: no operator, idle, not contributing, no executed_by', () => {
    const op = operatorWith([bond('12D3KooWPeer', 'zid_peer')], { zid_peer: 'contributing' });
    expect(op.bond()).toBeNull();
    expect(op.mode()).toBe('idle');
    expect(op.contributing()).toBeNull();
    expect(op.attest('a'.repeat(64), 'b'.repeat(64), 7)).toBeNull();
  });

  it('a bonded operator that is not contributing: its mode, but no executed_by', () => {
    const op = operatorWith([bond(SELF, 'zid_op')], { zid_op: 'experimenting' });
    expect(op.bond()?.bond.bond_id).toBe('bond_zid_op');
    expect(op.mode()).toBe('experimenting');
    expect(op.contributing()).toBeNull();
    expect(op.attest('a'.repeat(64), 'b'.repeat(64), 7)).toBeNull();
  });

  it('a contributing operator: every run carries its bond, signed with this node’s key over the result digest', () => {
    const op = operatorWith([bond(SELF, 'zid_op')], { zid_op: 'contributing' });
    expect(op.contributing()).toMatchObject({ bond_id: 'bond_zid_op' });
    const e = op.attest('a'.repeat(64), 'b'.repeat(64), 7);
    expect(e).toMatchObject({ node: SELF, bond_id: 'bond_zid_op', svcond: 7, request_digest: 'a'.repeat(64) });
    expect(e!.signature).toBe(`signed:${executionText(e!, 'b'.repeat(64))}`);
    const verify = (signer: string, text: string, signature: string) => signer === SELF && signature === `signed:${text}`;
    expect(verifyExecution(verify, e!, 'b'.repeat(64))).toBe(true);
    expect(verifyExecution(verify, e!, 'c'.repeat(64))).toBe(false);
  });
});
