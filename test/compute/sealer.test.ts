// The seal worker builds and serialises bodies exactly as the inline sealer does; the jobs of one turn of the event
// loop cross to it in one message; a job that cannot be sealed fails alone; a closed sealer refuses work; a body of a chain evaluated at another stamp carries its own stamp.
// And a node with sealWorker off seals verifiable results.
import { generateKeyPairSync, sign as edSign } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { deriveKey, finishSeal, prepareSeal, verifyBody } from '../../src/kernel/receipt.js';
import { stampAt } from '../../src/kernel/clock.js';
import { modulationFactor } from '../../src/kernel/modulation.js';
import { metricShift } from '../../src/kernel/parity.js';
import { evaluateChain } from '../../src/kernel/operators/chain.js';
import { InlineSealer, WorkerSealer } from '../../src/compute/sealer.js';
import { buildBody, LEDGER_MEMBERS, prepareBody, type BodyJob } from '../../src/compute/sealed-body.js';
import { chainKey } from '../../src/compute/compiled-chain.js';
import { bearer, call, startTestNode, zkIdentity } from '../helpers/node.js';

const key = deriveKey(Buffer.from('sealer test secret'), 'RECEIPT');
const nodeKey = generateKeyPairSync('ed25519').privateKey;
const sign = (data: Uint8Array | string) => edSign(null, Buffer.from(data), nodeKey).toString('base64');

/** A compute job at stamp `ns`, its chain evaluated at `evaluatedAt` (a kept evaluation: another stamp). */
function job(mass: number, ns = 1_790_000_000_123_456_789n, evaluatedAt = ns): BodyJob {
  const stamp = stampAt(ns);
  const R_t = modulationFactor(stamp.phase, 0);
  const at = stampAt(evaluatedAt);
  const chain = evaluateChain(
    { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: mass, velocity_m_s: 3 } },
    { R_t: modulationFactor(at.phase, 0), svcond: at.svcond, phase: at.phase, phi0: 0 },
  );
  return {
    kind: 'compute',
    parts: {
      stamp,
      R_t,
      resultId: `res_${stamp.svcond}_x`,
      resultDigest: 'cd'.repeat(32),
      shift: metricShift(stamp.phase, 0, 0),
      phi0: 0,
      node: 'node-a',
      kernelVersion: '1.287.6',
      executedBy: null,
    },
    chain,
    average: chain.value,
    relError: 0,
  };
}

const ledger = { tally_charge: { action: 'compute', cost: 1 }, envelope: null, audit: { slug: 'm-1', seq: 3, hash: 'ef'.repeat(32) } };

describe('sealers', () => {
  const worker = new WorkerSealer(key);
  afterAll(() => worker.close());

  it('the worker gives the same bytes and slots as inline, and the finished body verifies', async () => {
    const inline = new InlineSealer(key);
    for (const mass of [2, 0.5, 1e6]) {
      const a = await inline.prepare(job(mass));
      const b = await worker.prepare(job(mass));
      expect(Buffer.from(b.bytes).equals(Buffer.from(a.bytes))).toBe(true);
      expect(b.slots).toEqual(a.slots);
      const bytes = finishSeal(key, sign, b, ledger).bytes;
      const body = JSON.parse(bytes.toString('utf8'));
      expect(body.value).toBe(0.5 * mass * 9);
      expect(body.audit).toEqual(ledger.audit);
      expect(verifyBody(key, body)).toBe(true);
    }
  });

  it('answers many concurrent jobs, each with its own body', async () => {
    const masses = Array.from({ length: 200 }, (_, i) => i + 1);
    const results = await Promise.all(masses.map((m) => worker.prepare(job(m))));
    results.forEach((r, i) => expect(JSON.parse(Buffer.from(finishSeal(key, sign, r, ledger).bytes).toString()).value).toBe(0.5 * masses[i]! * 9));
  });

  it('a job that cannot be serialised fails alone; the worker goes on', async () => {
    const bad = job(2) as Extract<BodyJob, { kind: 'compute' }>;
    // A lone surrogate has no canonical form (RFC 8785): serialisation refuses it.
    bad.chain = { ...bad.chain, equations: [...bad.chain.equations, 'broken \ud800 text'] };
    await expect(worker.prepare(bad)).rejects.toThrow(/sealing failed/);
    const ok = await worker.prepare(job(2));
    // audit, envelope, tally_charge, seal_signature, and svcProof at the top and in the cko.
    expect(ok.slots.map((s) => s.name).sort()).toEqual(['audit', 'envelope', 'seal_signature', 'svcProof', 'svcProof', 'tally_charge']);
  });

  it('the jobs of one turn cross to the worker in one message; a bad one among them fails alone', async () => {
    const port = (worker as unknown as { worker: { postMessage: (message: unknown, ...rest: unknown[]) => void } }).worker;
    const post = port.postMessage.bind(port);
    const posted: unknown[] = [];
    port.postMessage = (message, ...rest) => (posted.push(message), post(message, ...rest));
    try {
      const bad = job(2) as Extract<BodyJob, { kind: 'compute' }>;
      bad.chain = { ...bad.chain, equations: [...bad.chain.equations, 'broken \ud800 text'] };
      const masses = [1, 2, 3, 4, 5, 6, 7, 8];
      const settled = await Promise.allSettled([...masses.map((m) => worker.prepare(job(m))), worker.prepare(bad), worker.prepare(job(9))]);
      expect(posted).toHaveLength(1);
      expect(Array.isArray(posted[0]) && posted[0].length).toBe(10);
      [...masses, null, 9].forEach((mass, i) => {
        const r = settled[i]!;
        if (mass === null) expect(r.status === 'rejected' && String(r.reason)).toMatch(/sealing failed/);
        else {
          expect(r.status).toBe('fulfilled');
          const prepared = (r as PromiseFulfilledResult<Awaited<ReturnType<typeof worker.prepare>>>).value;
          expect(JSON.parse(finishSeal(key, sign, prepared, ledger).bytes.toString('utf8')).value).toBe(0.5 * mass * 9);
        }
      });
      // A job of a later turn goes alone, as its text.
      expect(JSON.parse(finishSeal(key, sign, await worker.prepare(job(10)), ledger).bytes.toString('utf8')).value).toBe(45);
      expect(posted).toHaveLength(2);
      expect(typeof posted[1]).toBe('string');
    } finally {
      port.postMessage = post;
    }
  });

  it('a closed sealer refuses work', async () => {
    const s = new WorkerSealer(key);
    await s.close();
    await expect(s.prepare(job(2))).rejects.toThrow(/closed/);
  });
});

describe('chain templates', () => {
  it('a chain key tells apart every pair of different requests, -0 and 0 included', () => {
    const base = { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 0, velocity_m_s: 3 } };
    const variants = [
      base,
      { ...base, inputs: { mass_kg: -0, velocity_m_s: 3 } },
      { ...base, inputs: { mass_kg: '-0', velocity_m_s: 3 } },
      { ...base, inputs: { mass_kg: '0', velocity_m_s: 3 } },
      { ...base, inputs: { mass_kg: -0, velocity_m_s: -0 } },
      { ...base, inputs: { mass_kg: 0, velocity_m_s: -0 } },
      { ...base, inputs: { velocity_m_s: 3, mass_kg: 0 } },
      { ...base, domain: 'relativity' },
    ];
    const keys = variants.map((v) => chainKey(v as never, 0));
    expect(new Set(keys).size).toBe(variants.length);
    expect(chainKey(JSON.parse(JSON.stringify(base)), 0)).toBe(keys[0]);
    expect(chainKey(base as never, 0.5)).not.toBe(keys[0]);
  });

  it('a body of a chain evaluated at another stamp carries its own stamp in every stamped field, on the worker as inline', async () => {
    const worker = new WorkerSealer(key);
    try {
      for (const mass of [2, 0.5]) {
        // One evaluation (at the first stamp), sealed at stamps across many ticks and phases.
        const first = 1_790_000_000_000_000_000n;
        for (let i = 0; i < 40; i++) {
          const j = job(mass, first + BigInt(i) * 97_531_000_123n, first) as Extract<BodyJob, { kind: 'compute' }>;
          const reference = prepareSeal(buildBody(key, j), LEDGER_MEMBERS);
          const inline = prepareBody(key, j);
          expect(Buffer.from(inline.bytes).equals(Buffer.from(reference.bytes))).toBe(true);
          const viaWorker = await worker.prepare(j);
          expect(Buffer.from(viaWorker.bytes).equals(Buffer.from(reference.bytes))).toBe(true);
          expect(viaWorker.slots).toEqual(reference.slots);
          const body = JSON.parse(finishSeal(key, sign, viaWorker, ledger).bytes.toString('utf8'));
          const { stamp, R_t } = j.parts;
          expect(body.svcond).toBe(stamp.svcond);
          expect(body.phase).toBe(stamp.phase);
          expect(body.R_t).toBe(R_t);
          expect(body.cko.R_t).toBe(R_t);
          expect(body.master_sum.terms[0].value).toBe(R_t);
          expect(body.cko.masterSum.terms[0].value).toBe(R_t);
          expect(body.svcond_receipt.svcond).toBe(stamp.svcond);
          expect(body.svcond_receipt.R_t).toBe(R_t);
          expect(body.equations[0]).toContain(String(stamp.svcond));
          expect(body.protocol[6].detail).toContain(`svcond ${stamp.svcond}`);
          expect(verifyBody(key, body)).toBe(true);
        }
      }
    } finally {
      await worker.close();
    }
  });
});

describe('a node with sealWorker off', () => {
  it('seals results that verify, with the same value', async () => {
    const t = await startTestNode({ sealWorker: false });
    try {
      const { key: apiKey } = await zkIdentity(t.url, 'inline-sealer');
      const r = await call(
        t.url,
        'POST',
        '/api/svc/compute',
        { domain: 'mechanics', operators: ['KO42', 'MECH_KINETIC_ENERGY'], inputs: { mass_kg: 2, velocity_m_s: 3 } },
        bearer(apiKey),
      );
      expect(r.status).toBe(200);
      expect(r.body.value).toBe(9);
      expect(r.body.audit.seq).toBe(1);
      const v = await call(t.url, 'POST', '/api/svc/verify', r.body, bearer(apiKey));
      expect(v.body.valid).toBe(true);
    } finally {
      await t.destroy();
    }
  });
});
