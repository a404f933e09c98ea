import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../../src/index.js';
import { bodyHmac } from '../../../src/providers/families/bodyHmac.js';
import { acceptsBoth, receiveAll, rejects, rejectsBoth, verifyAt } from '../kit.js';
import { assertFamilyProperty, outcome } from './property.js';

// Test declarations of the family: what a new provider file holds, and nothing else.
const hexPrefixed = bodyHmac({
  name: 'acme',
  retention: '2d',
  secret: { lookalikes: [['acme_api_', 'an API key']], expected: 'the webhook secret' },
  signature: { header: 'x-acme-signature', encoding: 'hex', prefix: 'sha256=', separator: ',' },
  requireHeaders: ['x-acme-event'],
  event: {
    id: { header: 'x-acme-delivery', signed: false },
    type: { header: 'x-acme-event' },
    typeSigned: false,
  },
});
const base64Url = bodyHmac({
  name: 'squarish',
  retention: '1d',
  signature: { header: 'x-squarish-signature', encoding: 'base64' },
  signsUrl: { option: 'notificationUrl', what: 'entered in the dashboard' },
  event: { id: 'event_id', type: ['meta', 'type'], typeSigned: true, perAttempt: ['attempt'] },
});

const key = () => randomBytes(24).toString('base64url');
const mac = (secret: string, ...parts: (string | Uint8Array)[]) => {
  const h = createHmac('sha256', secret);
  for (const p of parts) h.update(p);
  return h.digest();
};

describe('body-HMAC family', () => {
  it('property: a hex signature over random bytes verifies; any single-byte change to body or signature does not', async () => {
    const secret = key();
    await assertFamilyProperty({
      provider: hexPrefixed({ secret }),
      sign: (body) => ({
        headers: {
          'x-acme-signature': `sha256=${mac(secret, body).toString('hex')}`,
          'x-acme-event': 'thing.done',
        },
      }),
      signatureHeader: 'x-acme-signature',
      hexSignature: true,
    });
  });

  it('property: a base64 signature over URL + random bytes verifies; any single-byte change to body or signature does not', async () => {
    const secret = key();
    const url = 'https://example.com/hooks/squarish';
    await assertFamilyProperty({
      provider: base64Url({ secret, notificationUrl: url }),
      sign: (body) => ({
        headers: { 'x-squarish-signature': mac(secret, url, body).toString('base64') },
      }),
      signatureHeader: 'x-squarish-signature',
    });
  });

  it('refuses the base64 spelling whose pad bits are not zero (it decodes to the same bytes)', async () => {
    const secret = key();
    const body = new TextEncoder().encode('{"event_id":"e1"}');
    const url = 'https://example.com/h';
    const good = mac(secret, url, body).toString('base64');
    assert.match(good, /[A-Za-z0-9+/]=$/);
    // 32 bytes leave 2 bits of the last character unused: flipping one gives the same bytes.
    const last = good.at(-2)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const twin = `${good.slice(0, -2)}${alphabet[alphabet.indexOf(last) ^ 1]}=`;
    assert.deepEqual(Buffer.from(twin, 'base64'), Buffer.from(good, 'base64'));
    const provider = base64Url({ secret, notificationUrl: url });
    assert.equal(await outcome(provider, body, { headers: { 'x-squarish-signature': good } }), 'ok');
    assert.equal(
      await outcome(provider, body, { headers: { 'x-squarish-signature': twin } }),
      'malformed_header',
    );
  });

  it('accepts one good signature among several and any secret while rotating', async () => {
    const [a, b] = [key(), key()];
    const body = '{"x":1}';
    const sigs = [b, a].map((k) => `sha256=${mac(k, body).toString('hex')}`).join(',');
    const d = { body, headers: { 'x-acme-signature': sigs, 'x-acme-event': 'e' } };
    await acceptsBoth(hexPrefixed({ secret: a }), d);
    await acceptsBoth(hexPrefixed({ secret: [key(), b] }), d);
    await rejectsBoth(hexPrefixed({ secret: key() }), d, 'invalid_signature');
  });

  it('checks requireHeaders with the signature, and reads id and type from unsigned headers as declared', async () => {
    const secret = key();
    const body = '{"x":1}';
    const headers = { 'x-acme-signature': `sha256=${mac(secret, body).toString('hex')}` };
    await rejectsBoth(hexPrefixed({ secret }), { body, headers }, 'missing_header');
    const verified = await verifyAt(hexPrefixed({ secret }), {
      body,
      headers: { ...headers, 'x-acme-event': 'thing.done', 'x-acme-delivery': 'd-1' },
    });
    assert.deepEqual(
      { id: verified.id, type: verified.type, typeSigned: verified.typeSigned, dedup: verified.dedup },
      { id: 'd-1', type: 'thing.done', typeSigned: false, dedup: 'body' },
    );
  });

  it('reads a nested signed type, keys on the body id, and leaves per-attempt fields out of the fingerprint', async () => {
    const secret = key();
    const url = 'https://example.com/h';
    const sign = (body: string) => ({
      body,
      url,
      headers: { 'x-squarish-signature': mac(secret, url, body).toString('base64') },
    });
    const provider = base64Url({ secret });
    const first = await verifyAt(provider, sign('{"event_id":"e1","meta":{"type":"t.x"},"attempt":1}'));
    const retry = await verifyAt(provider, sign('{"event_id":"e1","meta":{"type":"t.x"},"attempt":2}'));
    assert.equal(first.id, 'e1');
    assert.equal(first.type, 't.x');
    assert.equal(first.dedup, 'id');
    assert.equal(first.fingerprint, retry.fingerprint);
    const { results } = await receiveAll(provider, [
      sign('{"event_id":"e1","meta":{"type":"t.x"},"attempt":1}'),
      sign('{"event_id":"e1","meta":{"type":"t.x"},"attempt":2}'),
    ]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    await rejects(provider, sign('{"meta":{"type":"t.x"}}'), 'missing_event_id');
  });

  it('refuses a look-alike credential and a malformed signed URL option at construction', () => {
    assert.throws(
      () => hexPrefixed({ secret: 'acme_api_123' }),
      (e: unknown) => e instanceof ConfigError && e.code === 'invalid_secret' && /an API key/.test(e.message),
    );
    assert.throws(
      () => base64Url({ secret: key(), notificationUrl: 'example.com/h' } as never),
      (e: unknown) => e instanceof ConfigError && e.code === 'invalid_option',
    );
  });

  it('uses the declared retention unless the options override it', () => {
    assert.equal(hexPrefixed({ secret: key() }).retentionMs, 2 * 86_400_000);
    assert.equal(hexPrefixed({ secret: key(), retention: '5d' }).retentionMs, 5 * 86_400_000);
  });
});
