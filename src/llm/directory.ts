// Which provider answers an identity's chat: the one it names (a provider kind, or `offline`), else its own, else
// the node's (config llm.provider), else none — the offline assistant.
import { InputError } from '../kernel/errors.js';
import { checkOutboundUrl, TRUSTED_URLS, type UrlPolicy } from '../util/url-policy.js';
import { PROVIDER_KIND_NAMES, providerKind, type ProviderConfig } from './providers.js';

export interface NodeProvider {
  kind: string;
  baseUrl?: string | undefined;
  apiKey: string;
  model?: string | undefined;
}

/** A provider as kept: its kind, an optional base URL, the key, an optional model, and where it may be called. */
export interface ProviderEntry {
  kind: string;
  baseUrl?: string | null;
  apiKey: string;
  model?: string | null;
  policy: UrlPolicy;
}

/** An identity's own provider credential, decrypted (credentials.ts). */
export interface OwnProviders {
  providerFor(zid: string, kind: string | null): Promise<ProviderEntry | null>;
}

/** The provider to call, or 400 naming what is missing; a base URL the policy refuses → 400 on field base_url. */
export function completeProvider(p: ProviderEntry, model: string | null): ProviderConfig {
  const known = providerKind(p.kind);
  if (!known) throw new InputError('provider', `unknown provider kind ${p.kind}`, PROVIDER_KIND_NAMES);
  if (p.baseUrl) checkOutboundUrl(p.baseUrl, p.policy, 'base_url');
  const baseUrl = p.baseUrl ?? known.baseUrl;
  const chosen = model ?? p.model ?? known.defaultModel;
  if (!baseUrl) throw new InputError('provider', `a ${p.kind} provider needs a base URL`, null);
  if (!chosen) throw new InputError('model', `name the model for a ${p.kind} provider`, null);
  return { kind: p.kind, baseUrl, apiKey: p.apiKey, model: chosen, policy: p.policy };
}

export class ProviderDirectory {
  constructor(
    private readonly nodeProvider: NodeProvider | null,
    private readonly own: OwnProviders | null,
  ) {}

  /** The provider for this chat, or null for the offline assistant. 400 when a named provider is not available. */
  async providerFor(zid: string, requested: string | undefined, model: string | undefined): Promise<ProviderConfig | null> {
    if (requested === 'offline') return null;
    if (requested !== undefined && !providerKind(requested))
      throw new InputError('provider', `unknown provider ${requested}`, ['offline', ...PROVIDER_KIND_NAMES]);
    const mine = this.own ? await this.own.providerFor(zid, requested ?? null) : null;
    if (mine) return completeProvider(mine, model ?? null);
    if (this.nodeProvider && (requested === undefined || requested === this.nodeProvider.kind))
      return completeProvider({ ...this.nodeProvider, policy: TRUSTED_URLS }, model ?? null);
    if (requested !== undefined) {
      throw new InputError('provider', `no ${requested} provider is configured for this identity or on this node (add one at POST /api/svc/llm/credentials)`, [
        'offline',
        ...(this.nodeProvider ? [this.nodeProvider.kind] : []),
      ]);
    }
    return null;
  }
}
