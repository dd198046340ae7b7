// The wire format of every mesh event (architecture.md §5), identical on both entrances:
//   event     = {type, sender, svcond, body, signature}
//   signature = base64 Ed25519 over canonicalJson({type, sender, svcond, body}) with the sender's node key;
//               the sender is an Ed25519 libp2p peer id, which embeds the public key (no lookup needed)
//   handshake = 'v1=' + hex HMAC-SHA256(meshSecret, `${sender}|${svcond}|${sha256hex(canonicalJson(body))}`)
// On HTTP the handshake travels in the x-node-handshake header; on libp2p the message data is the UTF-8 JSON
// of {event, handshake} (the handshake field beside the event).
import { createHmac, createPrivateKey, createPublicKey, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromString } from '@libp2p/peer-id';
import { NoCanonicalForm, canonicalJson } from '../kernel/canonical.js';
import { sha256Hex } from '../kernel/bytes.js';
import { BoundedMap } from '../util/bounded-map.js';

export const HANDSHAKE_HEADER = 'x-node-handshake';
export const HANDSHAKE_VERSION = 'v1=';

export const TOPICS = {
  ticks: 'svc/ticks/1',
  events: 'svc/events/1',
  identity: 'svc/identity/1',
  consensus: 'svc/consensus/1',
  dns: 'svc/dns/1',
} as const;
export type MeshTopic = (typeof TOPICS)[keyof typeof TOPICS];
export const ALL_TOPICS: readonly MeshTopic[] = Object.values(TOPICS);

export function isMeshTopic(t: string): t is MeshTopic {
  return (ALL_TOPICS as readonly string[]).includes(t);
}

export interface MeshEvent {
  type: string;
  /** The sender's libp2p peer id (Ed25519), i.e. its node id. */
  sender: string;
  /** Tick at which the sender made the event. */
  svcond: number;
  body: unknown;
  /** base64 Ed25519 signature over canonicalJson({type, sender, svcond, body}). */
  signature: string;
}

/** What travels as the data of a gossipsub message. */
export interface WireEnvelope {
  event: MeshEvent;
  handshake?: string;
}

/** Topic an event type travels on when no topic is named (used to relay events accepted over HTTP). */
export function topicForType(type: string): MeshTopic {
  if (type === 'tick') return TOPICS.ticks;
  if (type.startsWith('dns.')) return TOPICS.dns;
  if (type.startsWith('identity.')) return TOPICS.identity;
  if (type.startsWith('consensus.')) return TOPICS.consensus;
  return TOPICS.events;
}

/** The exact bytes that are signed. */
export function signingText(e: { type: string; sender: string; svcond: number; body: unknown }): string {
  return canonicalJson({ type: e.type, sender: e.sender, svcond: e.svcond, body: e.body });
}

/** sha256 hex of the canonical JSON of the body. */
export function bodyDigest(body: unknown): string {
  return sha256Hex(canonicalJson(body));
}

/** Identity of an event for duplicate detection: (sender, svcond, body digest). */
export function eventId(sender: string, svcond: number, digest: string): string {
  return sha256Hex(`${sender}|${svcond}|${digest}`);
}

export function handshakeFor(secret: string, sender: string, svcond: number, digest: string): string {
  return HANDSHAKE_VERSION + createHmac('sha256', secret).update(`${sender}|${svcond}|${digest}`).digest('hex');
}

// Ed25519 through node:crypto with KeyObjects made once: building a key from its encoding on every call costs
// more than the signature itself. DER prefixes of RFC 8410 (SubjectPublicKeyInfo / PKCS#8 for Ed25519).
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
const signers = new WeakMap<PrivateKey, KeyObject>();
const VERIFIER_CACHE_MAX = 4_096;
const verifiers = new BoundedMap<string, KeyObject | null>(VERIFIER_CACHE_MAX);

function signerFor(privateKey: PrivateKey): KeyObject {
  let k = signers.get(privateKey);
  if (!k) {
    if (privateKey.type !== 'Ed25519') throw new Error('the node key must be Ed25519');
    // libp2p's raw Ed25519 private key is seed (32 bytes) followed by the public key.
    const seed = Buffer.from(privateKey.raw.subarray(0, 32));
    k = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
    signers.set(privateKey, k);
  }
  return k;
}

/** The public key of an Ed25519 peer id, or null when the sender is not one. Cached (bounded). */
function verifierFor(sender: string): KeyObject | null {
  const hit = verifiers.get(sender);
  if (hit !== undefined) return hit;
  let k: KeyObject | null = null;
  try {
    const pid = peerIdFromString(sender);
    if (pid.type === 'Ed25519' && pid.publicKey !== undefined) {
      k = createPublicKey({ key: Buffer.concat([SPKI_ED25519, Buffer.from(pid.publicKey.raw)]), format: 'der', type: 'spki' });
    }
  } catch {
    k = null;
  }
  verifiers.set(sender, k);
  return k;
}

/** base64 Ed25519 signature of a text with the node key. */
export function signText(privateKey: PrivateKey, text: string): string {
  return edSign(null, Buffer.from(text, 'utf8'), signerFor(privateKey)).toString('base64');
}

/** base64 Ed25519 signature of UTF-8 bytes or a text, with the node key made into a KeyObject once (a hot path: sealing). */
export type BytesSigner = (data: Uint8Array | string) => string;

export function bytesSigner(privateKey: PrivateKey): BytesSigner {
  const key = signerFor(privateKey);
  return (data) => edSign(null, typeof data === 'string' ? Buffer.from(data, 'utf8') : data, key).toString('base64');
}

export async function signEvent(privateKey: PrivateKey, sender: string, type: string, svcond: number, body: unknown): Promise<MeshEvent> {
  const signature = signText(privateKey, signingText({ type, sender, svcond, body }));
  return { type, sender, svcond, body, signature };
}

/** A signed event together with its handshake (what a node sends on either entrance). */
export async function buildEnvelope(
  privateKey: PrivateKey,
  sender: string,
  secret: string,
  type: string,
  svcond: number,
  body: unknown,
): Promise<Required<WireEnvelope>> {
  const event = await signEvent(privateKey, sender, type, svcond, body);
  return { event, handshake: handshakeFor(secret, sender, svcond, bodyDigest(body)) };
}

/**
 * Verify an event's signature with the public key embedded in its sender peer id.
 * False when the sender is not a parseable Ed25519 peer id, the event has no canonical text, or the signature does not verify.
 */
export async function verifyEventSignature(e: MeshEvent): Promise<boolean> {
  let text: string;
  try {
    text = signingText(e);
  } catch (err) {
    // No signature covers a text that cannot exist (a lone surrogate from a peer's or caller's JSON).
    if (err instanceof NoCanonicalForm) return false;
    throw err;
  }
  return verifyText(e.sender, text, e.signature);
}

/**
 * Verify a base64 Ed25519 signature of a text by the node `signer` (a peer id; its embedded public key). False
 * when the signer is not an Ed25519 peer id, the signature is not 64 bytes of base64, or it does not verify.
 */
export function verifyText(signer: string, text: string, signature: string): boolean {
  try {
    const key = verifierFor(signer);
    if (key === null) return false;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(signature)) return false;
    const sig = Buffer.from(signature, 'base64');
    if (sig.length !== 64) return false;
    return edVerify(null, Buffer.from(text, 'utf8'), key, sig);
  } catch {
    return false;
  }
}

export function encodeEnvelope(env: WireEnvelope): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(env));
}

/** Parse gossipsub message data; undefined when it is not JSON of an object. */
export function decodeEnvelope(data: Uint8Array): { event: unknown; handshake: unknown } | undefined {
  try {
    const v: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data));
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    const o = v as Record<string, unknown>;
    return { event: o.event, handshake: o.handshake };
  } catch {
    return undefined;
  }
}
