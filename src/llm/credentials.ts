// Provider credentials (spec 5.10): an identity's own API keys for the eight provider kinds, account-scoped (kept at
// the identity's home, under its ZID), stored AES-256-GCM encrypted under a key derived with HKDF-SHA256 from the
// node's credential secret (config/credential-secret.ts). The record binds its ciphertext to (zid, id, kind) as
// additional data, so a ciphertext moved to another record does not open. After creation only a prefix of the key
// is ever shown; the key itself leaves this module only to call the provider.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { capReached, ServiceError } from '../kernel/errors.js';
import type { Store, Sublevel } from '../store/db.js';
import type { UrlPolicy } from '../util/url-policy.js';
import type { OwnProviders, ProviderEntry } from './directory.js';
import { KeyedLock } from '../util/keyed-lock.js';

export const CREDENTIALS_PER_IDENTITY_MAX = 16;

/** The key of AES-256-GCM: HKDF-SHA256 of the node secret (a fixed salt and purpose label). */
export function credentialKey(secret: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, Buffer.from('svc-node llm credentials'), Buffer.from('AES-256-GCM v1'), 32));
}

/** What is shown of a key: its first characters (at most 8, at most a third of it), then an ellipsis. */
export function keyPrefix(apiKey: string): string {
  return `${apiKey.slice(0, Math.min(8, Math.floor(apiKey.length / 3)))}…`;
}

interface StoredCredential {
  id: string;
  zid: string;
  kind: string;
  base_url: string | null;
  model: string | null;
  label: string | null;
  prefix: string;
  created_unix_ms: number;
  /** AES-256-GCM: 12-byte IV, 16-byte tag, ciphertext; base64. */
  enc: { v: 1; iv: string; tag: string; ct: string };
}

export type CredentialView = Omit<StoredCredential, 'enc' | 'zid' | 'created_unix_ms'> & { created_at: string };

function view(c: StoredCredential): CredentialView {
  return {
    id: c.id,
    kind: c.kind,
    base_url: c.base_url,
    model: c.model,
    label: c.label,
    prefix: c.prefix,
    created_at: new Date(c.created_unix_ms).toISOString(),
  };
}

const aad = (zid: string, id: string, kind: string) => Buffer.from(`${zid}\n${id}\n${kind}`, 'utf8');

export class CredentialStore implements OwnProviders {
  private readonly sub: Sublevel;
  /** One creation per identity at a time: the count read and the commit are one step, so the cap holds under parallel calls. */
  private readonly creating = new KeyedLock();

  constructor(
    private readonly store: Store,
    private readonly key: Buffer,
    private readonly nowMs: () => number,
    /** Where a credential's base URL may point (config llm.baseUrls): callers choose it, so not inside the node's network. */
    readonly urlPolicy: UrlPolicy,
  ) {
    this.sub = store.sub('llm_credentials');
  }

  private async records(zid: string): Promise<StoredCredential[]> {
    const rows = await this.store.range<StoredCredential>(this.sub, { gte: `${zid}:`, lt: `${zid};` });
    return rows.map((r) => r.value).sort((a, b) => b.created_unix_ms - a.created_unix_ms || (a.id < b.id ? 1 : -1));
  }

  async create(
    zid: string,
    input: { kind: string; api_key: string; base_url?: string | undefined; model?: string | undefined; label?: string | undefined },
  ): Promise<CredentialView> {
    return this.creating.run(zid, () => this.add(zid, input));
  }

  private async add(
    zid: string,
    input: { kind: string; api_key: string; base_url?: string | undefined; model?: string | undefined; label?: string | undefined },
  ): Promise<CredentialView> {
    const held = (await this.records(zid)).length;
    if (held >= CREDENTIALS_PER_IDENTITY_MAX)
      throw capReached('provider credentials', CREDENTIALS_PER_IDENTITY_MAX, held, 'delete one (DELETE /api/svc/llm/credentials/:id) to add another');
    const id = `cred_${randomBytes(12).toString('hex')}`;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(aad(zid, id, input.kind));
    const ct = Buffer.concat([cipher.update(input.api_key, 'utf8'), cipher.final()]);
    const record: StoredCredential = {
      id,
      zid,
      kind: input.kind,
      base_url: input.base_url ?? null,
      model: input.model ?? null,
      label: input.label ?? null,
      prefix: keyPrefix(input.api_key),
      created_unix_ms: this.nowMs(),
      enc: { v: 1, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), ct: ct.toString('base64') },
    };
    await this.store.commit([{ type: 'put', sub: this.sub, key: `${zid}:${id}`, value: record as never }]);
    return view(record);
  }

  async list(zid: string): Promise<CredentialView[]> {
    return (await this.records(zid)).map(view);
  }

  /** Delete one of the identity's credentials; 404 when it has none of that id. */
  async delete(zid: string, id: string): Promise<void> {
    const rec = await this.store.get<StoredCredential>(this.sub, `${zid}:${id}`);
    if (!rec) throw new ServiceError(404, 'SVC_NOT_FOUND', `no provider credential ${id}`);
    await this.store.commit([{ type: 'del', sub: this.sub, key: `${zid}:${id}` }]);
  }

  private open(rec: StoredCredential): string {
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(rec.enc.iv, 'base64'));
    decipher.setAAD(aad(rec.zid, rec.id, rec.kind));
    decipher.setAuthTag(Buffer.from(rec.enc.tag, 'base64'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(rec.enc.ct, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new ServiceError(500, 'SVC_INTERNAL_ERROR', `provider credential ${rec.id} cannot be decrypted with this node's credential secret`);
    }
  }

  /** One credential with its key, for a call to its provider (404 when the identity has none of that id). */
  async withKey(zid: string, id: string): Promise<ProviderEntry> {
    const rec = await this.store.get<StoredCredential>(this.sub, `${zid}:${id}`);
    if (!rec) throw new ServiceError(404, 'SVC_NOT_FOUND', `no provider credential ${id}`);
    return { kind: rec.kind, baseUrl: rec.base_url, apiKey: this.open(rec), model: rec.model, policy: this.urlPolicy };
  }

  /** The identity's newest credential of a kind (any kind when null), with its key; null when it has none. */
  async providerFor(zid: string, kind: string | null): Promise<ProviderEntry | null> {
    const rec = (await this.records(zid)).find((r) => kind === null || r.kind === kind);
    return rec ? { kind: rec.kind, baseUrl: rec.base_url, apiKey: this.open(rec), model: rec.model, policy: this.urlPolicy } : null;
  }
}
