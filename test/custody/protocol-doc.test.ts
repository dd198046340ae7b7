// docs/protocol.md §19 is true: its custody example is recomputed from the document's own numbers with node:crypto and
// the RFC 8785 package `canonicalize` (not the node's code), then the node's schemas, hash and request agree with it.
import { createHash, createHmac, createPrivateKey, createPublicKey, sign as edSign, verify as edVerify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { peerIdFromString } from '@libp2p/peer-id';
import { describe, expect, it } from 'vitest';
import { custodyRequest, promiseRequest } from '../../src/custody/client.js';
import { custodySetOf } from '../../src/custody/custody-set.js';
import { EPOCH_RECORDS } from '../../src/custody/failover.js';
import { homeChangeSchema } from '../../src/custody/home-change.js';
import { promiseSigningText, promisesFault } from '../../src/custody/promise.js';
import { entryHash, entrySchema, signingTextOf, verifyEntrySignature } from '../../src/custody/entry.js';
import {
  custodyAnswerSchema,
  custodyRequestSchema,
  entryRecordsSchema,
  promiseAnswerSchema,
  promiseRequestSchema,
  recordsDigest,
} from '../../src/custody/protocol.js';
import { verifyText } from '../../src/mesh/wire.js';

const DOC = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'protocol.md'), 'utf8');
const m = /```json example=custody\n([\s\S]*?)\n```/.exec(DOC);
if (!m) throw new Error('docs/protocol.md has no example=custody');
const x = JSON.parse(m[1]!);

const jcs = (v: unknown): string => canonicalize(v)!;
const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
const edPrivate = (seedHex: string) =>
  createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seedHex, 'hex')]), format: 'der', type: 'pkcs8' });
const rawPublic = (seedHex: string) => (createPublicKey(edPrivate(seedHex)).export({ format: 'der', type: 'spki' }) as Buffer).subarray(-32);

describe('docs/protocol.md §19, /svc/custody/1', () => {
  it('the records digest, the entry hash, the signature and the handshake follow from the numbers', () => {
    // records: SHA-256 over `type|sublevel|key|value\n` of each record, in order.
    const h = createHash('sha256');
    for (const [type, sub, key, value] of x.records.ops as string[][]) h.update(`${type}|${sub}|${key}|${value ?? ''}\n`, 'utf8');
    expect(h.digest('hex')).toBe(x.records_digest);
    expect(x.entry.records).toBe(x.records_digest);
    expect(x.request.records).toEqual([x.records]);
    expect(jcs(x.entry)).toBe(x.entry_jcs);
    expect(sha256(x.entry_jcs)).toBe(x.entry_hash);
    expect(x.signing_text).toBe(`svc/custody/1|${x.entry_hash}`);
    // Ed25519 is deterministic: the seed signs to exactly the document's signature, and the peer id's key verifies it.
    expect(edSign(null, Buffer.from(x.signing_text, 'utf8'), edPrivate(x.custodian_seed_hex)).toString('base64')).toBe(x.signature);
    const embedded = Buffer.from(peerIdFromString(x.custodian).publicKey!.raw);
    expect(embedded.equals(rawPublic(x.custodian_seed_hex))).toBe(true);
    expect(edVerify(null, Buffer.from(x.signing_text, 'utf8'), createPublicKey(edPrivate(x.custodian_seed_hex)), Buffer.from(x.signature, 'base64'))).toBe(
      true,
    );
    const { handshake, ...request } = x.request;
    expect(request.entries).toEqual([x.entry]);
    expect(sha256(jcs(request))).toBe(x.request_digest);
    const mac = createHmac('sha256', Buffer.from(x.mesh_secret, 'utf8')).update(`${x.home}|${x.request.svcond}|${x.request_digest}`, 'utf8').digest('hex');
    expect(handshake).toBe(`v1=${mac}`);
    expect(x.answer.results[0].signature).toBe(x.signature);
  });

  it("the node's schemas, hash, signature check and request agree with the document", () => {
    const entry = entrySchema.parse(x.entry);
    expect(entryHash(entry)).toBe(x.entry_hash);
    expect(signingTextOf(x.entry_hash)).toBe(x.signing_text);
    expect(verifyEntrySignature(verifyText, x.entry_hash, { node: x.custodian, signature: x.signature })).toBe(true);
    expect(verifyEntrySignature(verifyText, x.entry_hash, { node: x.home, signature: x.signature })).toBe(false);
    expect(recordsDigest(entryRecordsSchema.parse(x.records))).toBe(x.entry.records);
    expect(custodyRequest(x.mesh_secret, x.home, x.request.svcond, [entry], [x.records])).toEqual(x.request);
    expect(custodyRequestSchema.safeParse(x.request).success).toBe(true);
    expect(custodyAnswerSchema.safeParse(x.answer).success).toBe(true);
    // No other member: an entry with one more is not an entry.
    expect(entrySchema.safeParse({ ...x.entry, extra: 1 }).success).toBe(false);
  });
});

const f = /```json example=custody-failover\n([\s\S]*?)\n```/.exec(DOC);
if (!f) throw new Error('docs/protocol.md has no example=custody-failover');
const y = JSON.parse(f[1]!);

describe('docs/protocol.md §19, failover', () => {
  it('the promise request, the promise, its signature, the epoch entry and the home change follow from the numbers', () => {
    const { handshake, ...request } = y.request;
    expect(sha256(jcs(request))).toBe(y.request_digest);
    const mac = createHmac('sha256', Buffer.from(x.mesh_secret, 'utf8')).update(`${y.candidate}|${y.request.svcond}|${y.request_digest}`, 'utf8').digest('hex');
    expect(handshake).toBe(`v1=${mac}`);
    const p = y.answer.promise;
    expect(p.promise).toEqual({ zid: x.entry.zid, epoch: 2, candidate: y.candidate, head: { epoch: 1, seq: 7, hash: x.entry_hash } });
    expect(jcs(p.promise)).toBe(y.promise_jcs);
    expect(sha256(y.promise_jcs)).toBe(y.promise_sha256);
    expect(y.signing_text).toBe(`svc/custody/1|promise|${y.promise_sha256}`);
    expect(edSign(null, Buffer.from(y.signing_text, 'utf8'), edPrivate(x.custodian_seed_hex)).toString('base64')).toBe(p.signature);
    expect(p.node).toBe(x.custodian);
    expect(y.epoch_entry).toMatchObject({ epoch: 2, seq: 8, prev_hash: x.entry_hash, kind: 'epoch', records: sha256(''), transfer: null });
    expect(sha256(jcs(y.epoch_entry))).toBe(y.epoch_entry_hash);
    expect(y.home_change).toEqual({ zid: x.entry.zid, epoch: 2, home: y.candidate, promises: [p] });
  });

  it("the node's schemas, request and checks agree with the document", () => {
    expect(promiseRequest(x.mesh_secret, y.candidate, y.request.svcond, x.entry.zid, 2)).toEqual(y.request);
    expect(promiseRequestSchema.safeParse(y.request).success).toBe(true);
    expect(promiseAnswerSchema.safeParse(y.answer).success).toBe(true);
    expect(promiseSigningText(y.answer.promise.promise)).toBe(y.signing_text);
    expect(verifyText(x.custodian, y.signing_text, y.answer.promise.signature)).toBe(true);
    expect(entryHash(entrySchema.parse(y.epoch_entry))).toBe(y.epoch_entry_hash);
    expect(y.epoch_entry.records).toBe(EPOCH_RECORDS);
    const change = homeChangeSchema.parse(y.home_change);
    // A set of two (the candidate and the custodian): the one promise of the custodian is short of its majority.
    const setOf = (at: { home: string }) => custodySetOf(x.entry.zid, at.home, [y.candidate, x.custodian], 3);
    expect(promisesFault(change.promises, x.entry.zid, 2, { home: y.candidate }, { epoch: 1, home: y.candidate }, setOf, verifyText)).toMatch(
      /1 distinct custodians of the set of epoch 1's home .*, 2 needed/,
    );
  });
});

const rc = /```json example=custody-reconfigure\n([\s\S]*?)\n```/.exec(DOC);
if (!rc) throw new Error('docs/protocol.md has no example=custody-reconfigure');
const z = JSON.parse(rc[1]!);

describe('docs/protocol.md §19, reconfiguration', () => {
  it('the promise of the new set, its signature, the epoch entry and the home change follow from the numbers', () => {
    const { handshake, ...request } = z.request;
    expect(request).toEqual({ v: 1, kind: 'promise', svcond: z.request.svcond, zid: x.entry.zid, epoch: 2, excluded: [z.excluded_node] });
    expect(sha256(jcs(request))).toBe(z.request_digest);
    const mac = createHmac('sha256', Buffer.from(x.mesh_secret, 'utf8')).update(`${z.home}|${z.request.svcond}|${z.request_digest}`, 'utf8').digest('hex');
    expect(handshake).toBe(`v1=${mac}`);
    // The node passed over is RFC 8032's second test vector's key.
    const vector2 = Buffer.from('3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c', 'hex');
    expect(Buffer.from(peerIdFromString(z.excluded_node).publicKey!.raw).equals(vector2)).toBe(true);
    const p = z.answer.promise;
    expect(p.promise).toEqual({ zid: x.entry.zid, epoch: 2, candidate: z.home, head: { epoch: 1, seq: 7, hash: x.entry_hash }, excluded: [z.excluded_node] });
    expect(jcs(p.promise)).toBe(z.promise_jcs);
    expect(sha256(z.promise_jcs)).toBe(z.promise_sha256);
    expect(z.signing_text).toBe(`svc/custody/1|promise|${z.promise_sha256}`);
    expect(edSign(null, Buffer.from(z.signing_text, 'utf8'), edPrivate(x.custodian_seed_hex)).toString('base64')).toBe(p.signature);
    expect(z.epoch_entry).toEqual({ ...y.epoch_entry, excluded: [z.excluded_node] });
    expect(sha256(jcs(z.epoch_entry))).toBe(z.epoch_entry_hash);
    expect(z.home_change).toEqual({ zid: x.entry.zid, epoch: 2, home: z.home, promises: [p], excluded: [z.excluded_node] });
  });

  it("the node's request, schemas and checks agree with the document", () => {
    expect(promiseRequest(x.mesh_secret, z.home, z.request.svcond, x.entry.zid, 2, [z.excluded_node])).toEqual(z.request);
    expect(promiseRequestSchema.safeParse(z.request).success).toBe(true);
    expect(promiseAnswerSchema.safeParse(z.answer).success).toBe(true);
    expect(verifyText(x.custodian, z.signing_text, z.answer.promise.signature)).toBe(true);
    expect(entryHash(entrySchema.parse(z.epoch_entry))).toBe(z.epoch_entry_hash);
    const change = homeChangeSchema.parse(z.home_change);
    // Members: the home, the custodian, the node passed over. The set before is all three; the promise of the
    // custodian and the home's own are a majority of it; the new set is the home and the custodian.
    const members = [z.home, x.custodian, z.excluded_node];
    expect(custodySetOf(x.entry.zid, z.home, members, 3).custodians).toHaveLength(3);
    expect(custodySetOf(x.entry.zid, z.home, members, 3, change.excluded).custodians).toEqual([z.home, x.custodian]);
    const setOf = (at: { home: string; excluded?: string[] }) => custodySetOf(x.entry.zid, at.home, members, 3, at.excluded);
    const view = { epoch: 1, home: z.home };
    expect(promisesFault(change.promises, x.entry.zid, 2, { home: z.home, excluded: change.excluded }, view, setOf, verifyText)).toMatch(/1 distinct/);
    expect(promisesFault(change.promises, x.entry.zid, 2, { home: z.home }, view, setOf, verifyText)).toMatch(/another custody set/);
  });
});
