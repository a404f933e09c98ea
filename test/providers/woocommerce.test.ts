import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { createReceiver } from '../../src/index.js';
import { woocommerce } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, NOW, oneSecret, providerCases, TRICKY_JSON, withHeader } from './kit.js';
import { countingStore } from './storeSpy.js';

// Signed by the test kit (signedDelivery), which signs as WooCommerce does (WC_Webhook::generate_signature,
// https://woocommerce.com/document/webhooks/): X-WC-Webhook-Signature: base64(HMAC-SHA256(secret, raw
// body)); the topic, resource, event, webhook and delivery ids travel unsigned.
const secret = () => randomBytes(24).toString('base64url');
const body = () => `{"id": 727, "status": "processing", "customer_note": ${TRICKY_JSON}, "total": "29.35"}`;

function sign(payload: string, key: string, at = NOW): Delivery {
  const d = signedDelivery('woocommerce', { payload, secret: key, at, id: '8a3b1c', type: 'order.created' });
  return { body: d.text, headers: { ...d.headers } };
}

describe('woocommerce provider (signed by the test kit)', () => {
  providerCases<string>({
    name: 'woocommerce',
    credential: oneSecret(secret),
    make: (config) => woocommerce({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', id: '8a3b1c', type: 'order.created', typeSigned: false },
    noteOf: (event) => (event as { customer_note: unknown }).customer_note,
    toleranceMs: undefined,
    freshIdHeader: (d) => withHeader(d, 'x-wc-webhook-delivery-id', 'fresh-delivery'),
    signatureHeader: 'x-wc-webhook-signature',
    malformed: ['ck_0123456789abcdef0123456789abcdef01234567', 'cs_0123456789abcdef', ' '],
  });

  it('answers the unsigned webhook_id ping sent on save with 200, touching neither store nor handler', async () => {
    let runs = 0;
    const key = secret();
    const { store: counted, calls } = countingStore();
    const receiver = createReceiver({
      provider: woocommerce({ secret: key }),
      store: counted,
      handler: () => {
        runs += 1;
      },
    });
    const result = await receiver.receive({
      method: 'POST',
      rawBody: 'webhook_id=12',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(result.outcome, 'handshake');
    assert.equal(result.status, 200);
    assert.equal(runs, 0);
    assert.equal(calls(), 0);
    // The spy sees a real delivery's claim: the zero above is no blind spot.
    const d = sign(body(), key);
    assert.equal((await receiver.receive({ rawBody: d.body, headers: d.headers })).outcome, 'processed');
    assert.ok(calls() > 0);
  });

  it('does not take a signed delivery, or any other unsigned body, for the ping', async () => {
    const key = secret();
    const provider = woocommerce({ secret: key });
    const unsigned = await provider.handshake?.({
      method: 'POST',
      rawBody: new TextEncoder().encode('webhook_id=12&x=1'),
      headers: new Headers(),
      receivedAt: new Date(),
    });
    assert.equal(unsigned, undefined);
    const signed = sign('webhook_id=12', key);
    const answer = await provider.handshake?.({
      method: 'POST',
      rawBody: new TextEncoder().encode('webhook_id=12'),
      headers: new Headers(signed.headers),
      receivedAt: new Date(),
    });
    assert.equal(answer, undefined);
  });

  it('defaults retention to 1 day', () => {
    assert.equal(woocommerce({ secret: secret() }).retentionMs, 86_400_000);
  });
});
