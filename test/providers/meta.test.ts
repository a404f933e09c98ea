/**
 * Meta (WhatsApp Cloud API, Messenger, Instagram). Meta publishes no signing helper on npm, so the
 * deliveries come from the test kit (signedDelivery), which signs with its documented algorithm:
 * https://developers.facebook.com/docs/graph-api/webhooks/getting-started#validate-payloads
 * (X-Hub-Signature-256: sha256=hex(HMAC-SHA256(app secret, raw body))) and the subscription check
 * https://developers.facebook.com/docs/graph-api/webhooks/getting-started#verification-requests
 * (GET ?hub.mode=subscribe&hub.challenge=<c>&hub.verify_token=<yours>, answered with <c>).
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { meta } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { assertHandshake, assertRefused, handshakeReceiver } from './handshakeKit.js';
import { type Delivery, NOW, oneSecret, providerCases, TRICKY_JSON } from './kit.js';

const secret = () => randomBytes(16).toString('hex');
const body = () =>
  `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{"messaging_product":"whatsapp","messages":[{"id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","type":"text","text":{"body":${TRICKY_JSON}}}]}}]}]}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('meta', { payload, secret: key, at: NOW });
  return { body: d.text, headers: { ...d.headers } };
}

const noteOf = (event: unknown) =>
  (event as { entry: { changes: { value: { messages: { text: { body: unknown } }[] } }[] }[] }).entry[0]!
    .changes[0]!.value.messages[0]!.text.body;

const URL_BASE = 'https://example.test/webhooks/meta';
const subscribe = (token: string, challenge = '1158201444') =>
  `${URL_BASE}?hub.mode=subscribe&hub.challenge=${challenge}&hub.verify_token=${encodeURIComponent(token)}`;

describe('meta provider (signed by the test kit)', () => {
  providerCases<string>({
    name: 'meta',
    credential: oneSecret(secret),
    make: (config) => meta({ secret: config }),
    body,
    sign: (payload, key) => sign(payload, key),
    expect: { dedup: 'body', type: 'whatsapp_business_account', typeSigned: true },
    noteOf,
    toleranceMs: undefined,
    signatureHeader: 'x-hub-signature-256',
    malformed: ['', ' ', 'EAAGm0PX4ZCpsBAKtoken', 'EAAB'],
  });

  it('refuses an access token pasted as the app secret, naming what to copy', () => {
    assert.throws(
      () => meta({ secret: 'EAAGm0PX4ZCpsBAOZBZA' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        /access token/.test(error.message) &&
        /App secret/.test(error.message),
    );
  });

  it('refuses an empty verifyToken at construction', () => {
    assert.throws(
      () => meta({ secret: secret(), verifyToken: ' ' }),
      (error: unknown) => error instanceof ConfigError && error.code === 'invalid_option',
    );
  });

  it('defaults retention to 8 days (Meta retries for up to 7)', () => {
    assert.equal(meta({ secret: secret() }).retentionMs, 8 * 86_400_000);
  });
});

describe('meta subscription check (hub.challenge GET)', () => {
  it('echoes hub.challenge as text when hub.verify_token matches: outcome handshake, store and handler untouched', async () => {
    const { send, ran, touched, outcomes } = handshakeReceiver(
      meta({ secret: secret(), verifyToken: 'my-verify-token' }),
    );
    const result = await send({ method: 'GET', url: subscribe('my-verify-token') });
    await assertHandshake(result, {
      body: '1158201444',
      headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' },
    });
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
    assert.deepEqual(
      outcomes.map((o) => o.outcome),
      ['handshake'],
    );
  });

  it('refuses a wrong or missing verify token, and a check when no verifyToken is configured, as invalid_token', async () => {
    const { send } = handshakeReceiver(meta({ secret: secret(), verifyToken: 'my-verify-token' }));
    assertRefused(await send({ method: 'GET', url: subscribe('my-verify-tokeN') }), 'invalid_token');
    assertRefused(await send({ method: 'GET', url: subscribe('') }), 'invalid_token');
    assertRefused(
      await send({ method: 'GET', url: `${URL_BASE}?hub.mode=subscribe&hub.challenge=1` }),
      'invalid_token',
    );
    const bare = handshakeReceiver(meta({ secret: secret() }));
    const refused = await bare.send({ method: 'GET', url: subscribe('anything') });
    assertRefused(refused, 'invalid_token');
    assert.equal(refused.status, 401);
  });

  it('never reflects a challenge that is not a plain token (markup, over-long)', async () => {
    const { send } = handshakeReceiver(meta({ secret: secret(), verifyToken: 't' }));
    for (const challenge of [encodeURIComponent('<script>x</script>'), 'a'.repeat(600), '']) {
      assertRefused(await send({ method: 'GET', url: subscribe('t', challenge) }), 'malformed_header');
    }
  });

  it('leaves a GET that is no subscription check to the method check (405), and POST deliveries to verification', async () => {
    const key = secret();
    const { send, ran } = handshakeReceiver(meta({ secret: key, verifyToken: 't' }), { strict: false });
    assertRefused(await send({ method: 'GET', url: `${URL_BASE}?hub.challenge=1` }), 'method_not_allowed');
    // A POST carrying the query of a check is a delivery like any other: verified, not echoed.
    const d = sign(body(), key);
    const processed = await send({ body: d.body as string, headers: d.headers, url: subscribe('t') });
    assert.equal(processed.outcome, 'processed');
    assert.equal(ran(), 1);
    assertRefused(await send({ body: d.body as string, headers: {}, url: subscribe('t') }), 'missing_header');
  });

  it('nothing reaches the store before verification: a forged delivery touches neither store nor handler', async () => {
    const { send, ran, touched } = handshakeReceiver(meta({ secret: secret(), verifyToken: 't' }));
    const forged = sign(body(), secret());
    assertRefused(await send({ body: forged.body as string, headers: forged.headers }), 'invalid_signature');
    assert.equal(ran(), 0);
    assert.deepEqual(touched, []);
  });
});
