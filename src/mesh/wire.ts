// The wire format of every mesh event (architecture.md §5), identical on both entrances:
//   event     = {type, sender, svcond, body, signature}
//   signature = base64 Ed25519 over canonicalJson({type, sender, svcond, body}) with the sender's node key;
//               the sender is an Ed25519 libp2p peer id, which embeds the public key (no lookup needed)
//   handshake = 'v1=' + hex HMAC-SHA256(meshSecret, `${sender}|${svcond}|${sha256hex(canonicalJson(body))}`)
// On HTTP the handshake travels in the x-node-handshake header; on libp2p the message data is the UTF-8 JSON
// of {event, handshake} (the handshake field beside the event).
import { createHmac } from 'node:crypto';
import type { PrivateKey } from '@libp2p/interface';
import { peerIdFromString } from '@libp2p/peer-id';
import { canonicalJson, sha256Hex } from '../kernel/canonical.js';

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

export async function signEvent(
  privateKey: PrivateKey,
  sender: string,
  type: string,
  svcond: number,
  body: unknown,
): Promise<MeshEvent> {
  const text = signingText({ type, sender, svcond, body });
  const sig = await privateKey.sign(new TextEncoder().encode(text));
  return { type, sender, svcond, body, signature: Buffer.from(sig).toString('base64') };
}

/** A signed event together with its handshake (what a node sends on either entrance). */
export async function buildEnvelope(
  privateKey: PrivateKey,
  sender: string,
  secret: string,
  type: string,
  svcond: number,
  body: unknown,
): Promise<WireEnvelope> {
  const event = await signEvent(privateKey, sender, type, svcond, body);
  return { event, handshake: handshakeFor(secret, sender, svcond, bodyDigest(body)) };
}

/**
 * Verify an event's signature with the public key embedded in its sender peer id.
 * False when the sender is not a parseable Ed25519 peer id or the signature does not verify.
 */
export async function verifyEventSignature(e: MeshEvent): Promise<boolean> {
  let sig: Buffer;
  try {
    const pid = peerIdFromString(e.sender);
    if (pid.type !== 'Ed25519' || pid.publicKey === undefined) return false;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(e.signature)) return false;
    sig = Buffer.from(e.signature, 'base64');
    if (sig.length !== 64) return false;
    const text = new TextEncoder().encode(signingText(e));
    return await pid.publicKey.verify(text, sig);
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
