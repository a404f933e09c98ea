/**
 * Dropbox webhooks. The Dropbox SDK on npm calls the API and signs no webhooks; the test kit
 * (onceonly/testing's signedDelivery) signs with the documented algorithm: https://www.dropbox.com/developers/reference/webhooks
 * (X-Dropbox-Signature: hex(HMAC-SHA256(app secret, raw body)); verification GET ?challenge=<c>
 * answered with <c>, Content-Type: text/plain and X-Content-Type-Options: nosniff).
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { dropbox } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { assertHandshake, assertRefused, handshakeReceiver } from './handshakeKit.js';
import { type Delivery, oneSecret, providerCases, TRICKY_JSON } from './kit.js';

const secret = () => randomBytes(12).toString('base64url');
const body = () =>
  `{"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc", "dbid:AAD9z"]}, "delta": {"users": [12345678, 23456789]}, "note": ${TRICKY_JSON}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('dropbox', { payload, secret: key });
  return { body: d.text, headers: { ...d.headers } };
}

describe('dropbox provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'dropbox',
    credential: oneSecret(secret),
    make: (config) => dropbox({ secret: config }),
    body,
    sign: (payload, key) => sign(payload, key),
    expect: { dedup: 'body', typeSigned: true },
    noteOf: (event) => (event as { note: unknown }).note,
    toleranceMs: undefined,
    signatureHeader: 'x-dropbox-signature',
    malformed: ['', '  ', 'sl.BCdEfGhIjKlMnOp'],
  });

  it('refuses a short-lived access token pasted as the app secret', () => {
    assert.throws(
      () => dropbox({ secret: 'sl.u.AFakeAccessTokenValue' }),
      (error: unknown) => error instanceof ConfigError && /access token/.test(error.message),
    );
  });
});

describe('dropbox endpoint check (challenge GET)', () => {
  const URL_BASE = 'https://example.test/webhooks/dropbox';

  it('echoes the challenge as text/plain with nosniff: outcome handshake, store and handler untouched', async () => {
    const { send, ran, touched } = handshakeReceiver(dropbox({ secret: secret() }));
    await assertHandshake(await send({ method: 'GET', url: `${URL_BASE}?challenge=eG9Ld1lOcXlnaQ` }), {
      body: 'eG9Ld1lOcXlnaQ',
      headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' },
    });
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });

  it('never reflects markup, and leaves a GET without a challenge to the method check', async () => {
    const { send } = handshakeReceiver(dropbox({ secret: secret() }));
    for (const c of [encodeURIComponent('<img src=x onerror=alert(1)>'), encodeURIComponent('a b'), '']) {
      assertRefused(await send({ method: 'GET', url: `${URL_BASE}?challenge=${c}` }), 'malformed_header');
    }
    assertRefused(await send({ method: 'GET', url: URL_BASE }), 'method_not_allowed');
  });

  it('nothing reaches the store before verification: a forged POST touches neither store nor handler', async () => {
    const { send, ran, touched } = handshakeReceiver(dropbox({ secret: secret() }));
    const forged = sign(body(), secret());
    assertRefused(
      await send({ body: forged.body as string, headers: forged.headers, url: `${URL_BASE}?challenge=abc` }),
      'invalid_signature',
    );
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });
});
