import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { lemonSqueezy } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, TRICKY_JSON, verifyAt, withHeader } from './kit.js';

// Lemon Squeezy's documented algorithm: hex(HMAC-SHA256(signing secret, raw body)) in X-Signature,
// signed by the test kit (onceonly/testing's signedDelivery), X-Event-Name: order_created.
const secret = () => randomBytes(12).toString('base64url');
const body = () =>
  `{"meta": {"event_name": "order_created", "custom_data": {"note": ${TRICKY_JSON}}}, "data": {"type": "orders", "id": "1"}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('lemonSqueezy', { payload, secret: key, type: 'order_created' });
  return { body: d.text, headers: { ...d.headers } };
}

describe('lemonSqueezy provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'lemonsqueezy',
    credential: oneSecret(secret),
    make: (config) => lemonSqueezy({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', type: 'order_created', typeSigned: true },
    noteOf: (event) => (event as { meta: { custom_data: { note: unknown } } }).meta.custom_data.note,
    toleranceMs: undefined,
    signatureHeader: 'x-signature',
    malformed: ['eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.x', '', '\n'],
  });

  it('takes the type from the signed meta.event_name, not the unsigned X-Event-Name header', async () => {
    const key = secret();
    const d = withHeader(sign(body(), key), 'x-event-name', 'subscription_cancelled');
    const verified = await verifyAt(lemonSqueezy({ secret: key }), d);
    assert.equal(verified.type, 'order_created');
    assert.equal(verified.typeSigned, true);
  });

  it('says the type is unsigned when it falls back to the X-Event-Name header', async () => {
    const key = secret();
    const payload = `{"meta": {"custom_data": {"note": ${TRICKY_JSON}}}, "data": {"type": "orders", "id": "1"}}`;
    const verified = await verifyAt(lemonSqueezy({ secret: key }), sign(payload, key));
    assert.equal(verified.type, 'order_created');
    assert.equal(verified.typeSigned ?? false, false);
  });

  it('defaults retention to 1 day (3 retries within minutes)', () => {
    assert.equal(lemonSqueezy({ secret: secret() }).retentionMs, 86_400_000);
  });
});
