// A provider call that is stopped: by its deadline it is the provider's failure to answer in time (502); by anything
// else (the client left, the node closing its requests) it ends with that reason, and nothing says a time ran out.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServiceError } from '../../src/kernel/errors.js';
import { openSession, probeProvider, type ProviderConfig } from '../../src/llm/providers.js';
import { TRUSTED_URLS } from '../../src/util/url-policy.js';
import { openAiAnswer, startFakeProvider, type FakeAnswer, type FakeProvider } from '../helpers/fake-llm.js';
import { waitUntil } from '../helpers/wait.js';

let fake: FakeProvider;
/** Turns the fake provider holds until the test ends. */
const held: (() => void)[] = [];
let config: ProviderConfig;

beforeAll(async () => {
  fake = await startFakeProvider(() => new Promise<FakeAnswer>((resolve) => held.push(() => resolve({ body: openAiAnswer('too late') }))));
  config = { kind: 'openai', baseUrl: `${fake.url}/v1`, apiKey: 'sk-test-provider-key', model: 'gpt-test', policy: TRUSTED_URLS };
});
afterEach(() => {
  for (const answer of held.splice(0)) answer();
});
afterAll(() => fake.close());

/** A turn of a session on `signal` against the provider that never answers in time; settles once the provider was asked. */
async function heldTurn(signal: AbortSignal): Promise<{ settled: Promise<unknown> }> {
  const asked = fake.requests.length;
  const settled = openSession(config, [{ role: 'user', content: 'hi' }], [], signal)
    .turn()
    .then(
      () => new Error('the turn answered'),
      (err: unknown) => err,
    );
  await waitUntil(() => fake.requests.length > asked, 'the provider to be asked');
  return { settled };
}

describe('a provider call that is stopped', () => {
  it('by its deadline: 502 SVC_LLM_PROVIDER_ERROR, "no answer in time"', async () => {
    const { settled } = await heldTurn(AbortSignal.timeout(300));
    const err = await settled;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err).toMatchObject({
      status: 502,
      code: 'SVC_LLM_PROVIDER_ERROR',
      message: 'the openai provider failed: no answer in time',
      extra: { provider: 'openai', model: 'gpt-test', provider_status: null },
    });
  });

  it('because the client left (with a deadline beside it, as chat combines them): the reason it was stopped for, no provider error', async () => {
    const left = new AbortController();
    const { settled } = await heldTurn(AbortSignal.any([AbortSignal.timeout(60_000), left.signal]));
    const gone = new ServiceError(499, 'SVC_BAD_REQUEST', 'the client left before its answer: its work was stopped');
    left.abort(gone);
    expect(await settled).toBe(gone);
  });

  it('the credentials test (probeProvider) on a provider that does not answer: "no answer in time"', async () => {
    await expect(probeProvider(config, 300, () => Date.now())).rejects.toMatchObject({
      status: 502,
      code: 'SVC_LLM_PROVIDER_ERROR',
      message: 'the openai provider failed: no answer in time',
    });
  });
});
