/**
 * Asana webhooks. The `asana` package on npm calls the API and signs no webhooks; the test kit
 * (onceonly/testing's signedDelivery) signs with the documented algorithm:
 * https://developers.asana.com/docs/webhooks-guide#security
 * (X-Hook-Signature: hex(HMAC-SHA256(hook secret, raw body))) and the handshake
 * https://developers.asana.com/docs/webhooks-guide#the-webhook-handshake
 * (a POST carrying X-Hook-Secret, answered 200 with the same X-Hook-Secret header).
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { asana } from '../../src/providers/index.js';
import type { HandshakeRequest } from '../../src/providers/types.js';
import { signedDelivery } from '../../src/testing/index.js';
import { assertHandshake, assertRefused, handshakeReceiver } from './handshakeKit.js';
import { type Delivery, oneSecret, type ProviderSpec, providerCases, TRICKY_JSON, verifyAt } from './kit.js';

const secret = () => randomBytes(16).toString('hex');
const body = () =>
  `{"events":[{"user":{"gid":"1199","resource_type":"user"},"created_at":"2026-11-30T05:00:00.000Z","action":"changed","resource":{"gid":"1200","resource_type":"task","name":${TRICKY_JSON}},"change":{"field":"name","action":"changed"}}]}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('asana', { payload, secret: key });
  return { body: d.text, headers: { ...d.headers } };
}
const noteOf = (event: unknown) =>
  (event as { events: { resource: { name: unknown } }[] }).events[0]!.resource.name;

/** The shared cases, for a secret given or looked up. */
const spec = (
  make: (config: string | string[]) => ReturnType<typeof asana>,
  malformed: string[],
): ProviderSpec<string> => ({
  name: 'asana',
  credential: oneSecret(secret),
  make,
  body,
  sign: (payload, key) => sign(payload, key),
  expect: { dedup: 'body', typeSigned: true },
  noteOf,
  toleranceMs: undefined,
  signatureHeader: 'x-hook-signature',
  malformed,
});

describe('asana provider, secret given (signed by the test kit, the documented algorithm)', () => {
  providerCases(
    spec(
      (config) => asana({ secret: config }),
      ['', ' ', '1/1204431964445:2f8a0b', '2/1204431964445/1204:0c3e'],
    ),
  );

  it('refuses a personal access token as the hook secret', () => {
    assert.throws(
      () => asana({ secret: '2/1204431964445/1204431964446:0c3e5d' }),
      (error: unknown) => error instanceof ConfigError && /personal access token/.test(error.message),
    );
  });

  it('defaults retention to 2 days (Asana retries for 24 hours)', () => {
    assert.equal(asana({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});

describe('asana provider, secret looked up per delivery', () => {
  providerCases(spec((config) => asana({ secret: async () => config }), []));

  it('refuses every delivery while no secret is stored, unsigned ones as missing_header', async () => {
    const provider = asana({ secret: () => undefined });
    const d = sign(body(), secret());
    await assert.rejects(Promise.resolve(verifyAt(provider, d)), { code: 'invalid_signature' });
    await assert.rejects(Promise.resolve(verifyAt(provider, { ...d, headers: {} })), {
      code: 'missing_header',
    });
    await assert.rejects(Promise.resolve(verifyAt(asana({}), d)), { code: 'invalid_signature' });
  });

  it('asks the lookup on every delivery, so a secret saved after construction is found at once', async () => {
    const key = secret();
    let stored: string | undefined;
    let lookups = 0;
    const provider = asana({
      secret: () => {
        lookups += 1;
        return stored;
      },
    });
    await assert.rejects(Promise.resolve(verifyAt(provider, sign(body(), key))), {
      code: 'invalid_signature',
    });
    stored = key;
    for (let i = 0; i < 2; i++) await verifyAt(provider, sign(body(), key));
    assert.equal(lookups, 3);
  });
});

describe('asana handshake (X-Hook-Secret)', () => {
  const URL_BASE = 'https://example.test/webhooks/asana';

  it('hands the secret to onHookSecret, echoes it, and verifies later deliveries with it: store and handler untouched by the handshake', async () => {
    // The app's own store of hook secrets, by target path, and the creations it has in flight.
    const saved = new Map<string, string>();
    const pending = new Set(['nonce-1']);
    const seen: HandshakeRequest[] = [];
    const provider = asana({
      secret: (input) => saved.get(new URL(input.url!).pathname),
      onHookSecret: (hookSecret, request) => {
        seen.push(request);
        const nonce = new URL(request.url!).searchParams.get('nonce') ?? '';
        if (!pending.delete(nonce)) return false;
        saved.set(new URL(request.url!).pathname, hookSecret);
        return true;
      },
    });
    const hookSecret = secret();
    const strict = handshakeReceiver(provider);
    await assertHandshake(
      await strict.send({ headers: { 'x-hook-secret': hookSecret }, url: `${URL_BASE}/p1?nonce=nonce-1` }),
      { body: '', headers: { 'x-hook-secret': hookSecret } },
    );
    assert.equal(strict.ran(), 0);
    assert.deepEqual(strict.touched, []);
    assert.equal(seen.length, 1);
    assert.equal(saved.get('/webhooks/asana/p1'), hookSecret);

    // An unexpected handshake (the nonce is spent) cannot replace the saved secret.
    assertRefused(
      await strict.send({ headers: { 'x-hook-secret': secret() }, url: `${URL_BASE}/p1?nonce=nonce-1` }),
      'invalid_token',
    );
    assert.equal(saved.get('/webhooks/asana/p1'), hookSecret);

    const loose = handshakeReceiver(provider, { strict: false });
    const d = sign(body(), hookSecret);
    const processed = await loose.send({ body: d.body as string, headers: d.headers, url: `${URL_BASE}/p1` });
    assert.equal(processed.outcome, 'processed');
    // Another endpoint's secret is not this one's.
    const other = await loose.send({ body: d.body as string, headers: d.headers, url: `${URL_BASE}/p2` });
    assert.equal(other.code, 'invalid_signature');
    assert.equal(loose.ran(), 1);
  });

  it('refuses every handshake when no onHookSecret is configured, or when it throws', async () => {
    const { send, touched } = handshakeReceiver(asana({ secret: secret() }));
    assertRefused(await send({ headers: { 'x-hook-secret': secret() } }), 'invalid_token');
    assert.deepEqual(touched, []);
    const failing = handshakeReceiver(
      asana({
        onHookSecret: () => {
          throw new Error('the database is down');
        },
      }),
    );
    const result = await failing.send({ headers: { 'x-hook-secret': secret() } });
    assert.notEqual(result.outcome, 'handshake');
    assert.equal(result.response?.headers.get('x-hook-secret') ?? null, null);
  });

  it('echoes only a plain token, and takes a request that also carries a signature for a delivery', async () => {
    let calls = 0;
    const { send } = handshakeReceiver(
      asana({
        onHookSecret: () => {
          calls += 1;
          return true;
        },
      }),
      { strict: false },
    );
    assertRefused(await send({ headers: { 'x-hook-secret': 'a\r\nset-cookie: x=1' } }), 'malformed_header');
    const signed = await send({
      headers: { 'x-hook-secret': secret(), 'x-hook-signature': 'ab' },
      body: '{}',
    });
    assert.equal(signed.code, 'invalid_signature');
    assert.equal(calls, 0);
  });
});
