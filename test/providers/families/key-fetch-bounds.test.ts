/**
 * Key fetching driven by unauthenticated requests stays bounded: each distinct key URL or key id in
 * an unsigned request could cost one request to the sender (for Plaid an authenticated call with
 * the user's client secret). Fetches in flight and per minute are bounded, a failure is remembered
 * for a cooldown, and the keys that verified real deliveries are never evicted by a flood. Counted
 * at the provider's injected `fetch`.
 */
import { strict as assert } from 'node:assert';
import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import { asymmetric } from '../../../src/providers/families/asymmetric.js';
import type { KeyFetch } from '../../../src/providers/families/fetchedKeys.js';
import { plaid } from '../../../src/providers/index.js';
import { code, NOW, verifyAt } from '../kit.js';

// A sender naming its certificate URL in a header (as PayPal's paypal-cert-url).
const sender = asymmetric({
  name: 'certheader',
  retention: '1d',
  algorithm: 'rsa-sha256',
  signature: { header: 'x-sig', encoding: 'base64' },
  timestamp: { header: 'x-time' },
  fetchedKeys: { urlHeader: 'x-cert-url', allowedHosts: ['*.certs.example.test'], format: 'pem' },
  event: { id: 'id', typeSigned: false },
});
const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = (key: KeyObject) => key.export({ format: 'pem', type: 'spki' }) as string;
const url = (name: string) => `https://a.certs.example.test/${name}.pem`;

function delivery(key: KeyObject, certUrl: string, body = '{"id":"p1"}') {
  const t = String(Math.floor(NOW.getTime() / 1000));
  const sig = sign('sha256', Buffer.from(t + body), key).toString('base64');
  return { body, headers: { 'x-sig': sig, 'x-time': t, 'x-cert-url': certUrl } };
}

/** A key server as a counted `fetch`: serves `keys` by URL, 404 for the rest, after `delayMs`. */
function keyServer(keys: Map<string, string>, delayMs = 0) {
  const counts = new Map<string, number>();
  let inFlight = 0;
  let peak = 0;
  const fetch: KeyFetch = async (u) => {
    counts.set(u, (counts.get(u) ?? 0) + 1);
    peak = Math.max(peak, ++inFlight);
    try {
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
      const body = keys.get(u);
      return new Response(body ?? 'not found', { status: body ? 200 : 404 }) as Awaited<ReturnType<KeyFetch>>;
    } finally {
      inFlight--;
    }
  };
  const total = () => [...counts.values()].reduce((a, b) => a + b, 0);
  return { fetch, counts, total, peak: () => peak };
}

describe('key fetching under a flood of unauthenticated requests', () => {
  it('200 requests naming 200 missing certificates at once make at most 2 fetches in flight and 10 in all', async () => {
    // Prepare: a slow key server, and 200 unsigned deliveries each naming its own certificate.
    const server = keyServer(new Map(), 30);
    const provider = sender({ fetch: server.fetch });
    const { privateKey } = rsa();
    // Act
    const codes = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        code(verifyAt(provider, delivery(privateKey, url(`forged-${i}`)))),
      ),
    );
    // Assess: every one refused 503 key_unavailable; the sender was asked a bounded number of times.
    assert.deepEqual(new Set(codes), new Set(['key_unavailable']));
    assert.ok(server.peak() <= 2, `peak in flight ${server.peak()}`);
    assert.ok(server.total() >= 1 && server.total() <= 10, `fetched ${server.total()} times`);
  });

  it('a missing key is fetched once per keyFailureCooldown, however often it is named', async () => {
    const server = keyServer(new Map());
    const provider = sender({ fetch: server.fetch, keyFailureCooldown: 300 });
    const { privateKey } = rsa();
    for (let i = 0; i < 20; i++) {
      assert.equal(await code(verifyAt(provider, delivery(privateKey, url('missing')))), 'key_unavailable');
    }
    assert.equal(server.counts.get(url('missing')), 1, 'one fetch within the cooldown');
    await new Promise((resolve) => setTimeout(resolve, 350));
    assert.equal(await code(verifyAt(provider, delivery(privateKey, url('missing')))), 'key_unavailable');
    assert.equal(server.counts.get(url('missing')), 2, 'asked again once the cooldown ran out');
  });

  it('a flood of other certificates never evicts the one that verified real deliveries', async () => {
    // Prepare: the real certificate, and 50 others that verify nothing this provider receives.
    const real = rsa();
    const keys = new Map([[url('real'), pem(real.publicKey)]]);
    for (let i = 0; i < 50; i++) keys.set(url(`flood-${i}`), pem(rsa().publicKey));
    const server = keyServer(keys);
    // Bounds wide open, a cache of 2: only the protection of verified keys can keep the real one.
    const provider = sender({
      fetch: server.fetch,
      keyCacheSize: 2,
      keyFetchConcurrency: 100,
      keyFetchesPerMinute: 1000,
    });
    assert.equal(await code(verifyAt(provider, delivery(real.privateKey, url('real')))), 'ok');
    // Act: the flood, signed with a key none of those certificates holds.
    const forger = rsa();
    for (let i = 0; i < 50; i++) {
      assert.equal(
        await code(verifyAt(provider, delivery(forger.privateKey, url(`flood-${i}`)))),
        'invalid_signature',
      );
    }
    // Assess: the flood was fetched (the fault happened), the real certificate was not fetched again.
    assert.equal(server.counts.get(url('flood-49')), 1);
    assert.equal(await code(verifyAt(provider, delivery(real.privateKey, url('real'), '{"id":"p2"}'))), 'ok');
    assert.equal(server.counts.get(url('real')), 1, 'the real certificate stayed cached');
  });

  it('with the default bounds, the real sender still verifies after a flood used them up', async () => {
    const real = rsa();
    const server = keyServer(new Map([[url('real'), pem(real.publicKey)]]));
    const provider = sender({ fetch: server.fetch });
    assert.equal(await code(verifyAt(provider, delivery(real.privateKey, url('real')))), 'ok');
    const forger = rsa();
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        code(verifyAt(provider, delivery(forger.privateKey, url(`x-${i}`)))),
      ),
    );
    assert.ok(server.total() <= 11, `fetched ${server.total()} times`);
    assert.equal(await code(verifyAt(provider, delivery(real.privateKey, url('real'), '{"id":"p3"}'))), 'ok');
  });

  it('Plaid: 200 JWTs naming 200 forged key ids cost at most 10 calls carrying the client secret', async () => {
    // Prepare: Plaid's key endpoint as a counted fetch that answers 400 for an unknown id.
    let calls = 0;
    let peak = 0;
    let inFlight = 0;
    const provider = plaid({
      clientId: '5e5ef8ba6a3d3c0012345678',
      secret: '0123456789abcdef0123456789abcd',
      environment: 'sandbox',
      fetch: async () => {
        calls++;
        peak = Math.max(peak, ++inFlight);
        await new Promise((resolve) => setTimeout(resolve, 20));
        inFlight--;
        return new Response('{"error_code":"INVALID_WEBHOOK_VERIFICATION_KEY_ID"}', { status: 400 });
      },
    });
    const jwt = (kid: string) =>
      `${Buffer.from(JSON.stringify({ alg: 'ES256', kid })).toString('base64url')}.${Buffer.from('{}').toString('base64url')}.${Buffer.alloc(64).toString('base64url')}`;
    // Act
    const codes = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        code(verifyAt(provider, { body: '{}', headers: { 'plaid-verification': jwt(`forged${i}`) } })),
      ),
    );
    // Assess
    assert.deepEqual(new Set(codes), new Set(['key_unavailable']));
    assert.ok(peak <= 2, `peak in flight ${peak}`);
    assert.ok(calls >= 1 && calls <= 10, `${calls} calls to Plaid`);
  });
});
