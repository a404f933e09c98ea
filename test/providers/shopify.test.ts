import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { shopify } from '../../src/providers/index.js';
import { type Delivery, providerCases, receiveAll, TRICKY_JSON, withHeader } from './kit.js';

// Shopify's documented algorithm: base64(HMAC-SHA256(client secret, raw body)).
const secret = () => `shpss_${randomBytes(16).toString('hex')}`;
const body = () => `{"id": 820982911946154508, "email": "jon@example.com", "note": ${TRICKY_JSON}}`;

function sign(payload: string, key: string): Delivery {
  return {
    body: payload,
    headers: {
      'x-shopify-hmac-sha256': createHmac('sha256', key).update(payload, 'utf8').digest('base64'),
      'x-shopify-topic': 'orders/create',
      'x-shopify-event-id': '98880550-7158-44d4-b7cd-2c97c8a091b5',
      'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
      'content-type': 'application/json',
    },
  };
}

describe('shopify provider (signed with the documented algorithm over node:crypto)', () => {
  providerCases<string>({
    name: 'shopify',
    credential: () => {
      const k = secret();
      return { signer: k, config: k };
    },
    make: (config) => shopify({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', id: '98880550-7158-44d4-b7cd-2c97c8a091b5', type: 'orders/create' },
    noteOf: (event) => (event as { note: unknown }).note,
    toleranceMs: undefined,
    freshIdHeader: (d) =>
      withHeader(
        withHeader(d, 'x-shopify-event-id', 'fresh-event-id'),
        'x-shopify-webhook-id',
        'fresh-webhook-id',
      ),
    signatureHeader: 'x-shopify-hmac-sha256',
    malformed: ['shpat_0123456789abcdef', 'shpca_abc', 'shppa_abc', ' '],
  });

  it('keys a retry with a new X-Shopify-Webhook-Id on the body: a duplicate', async () => {
    const key = secret();
    const first = sign(body(), key);
    const { results } = await receiveAll(shopify({ secret: key }), [
      first,
      withHeader(first, 'x-shopify-webhook-id', 'retry-webhook-id'),
    ]);
    assert.equal(results[1]?.outcome, 'duplicate');
  });

  it('defaults retention to 1 day (8 tries over 4 hours)', () => {
    assert.equal(shopify({ secret: secret() }).retentionMs, 86_400_000);
  });
});
