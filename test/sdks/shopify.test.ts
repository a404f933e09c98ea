import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import '@shopify/shopify-api/adapters/web-api';
import { ApiVersion, shopifyApi } from '@shopify/shopify-api';
import { getHmac } from '@shopify/shopify-api/test-helpers';
import { shopify } from '../../src/providers/index.js';
import { senders, signedDelivery, testSecret } from '../../src/testing/index.js';
import {
  type Delivery,
  oneSecret,
  providerCases,
  receiveAll,
  rejects,
  TRICKY_JSON,
  verifyAt,
  withHeader,
} from '../providers/kit.js';

// Signed by Shopify's own test helper (@shopify/shopify-api getHmac: base64 HMAC-SHA256 of the raw body).
const secret = () => `shpss_${randomBytes(16).toString('hex')}`;
const body = () => `{"id": 820982911946154508, "email": "jon@example.com", "note": ${TRICKY_JSON}}`;

function sign(payload: string, key: string): Delivery {
  return {
    body: payload,
    headers: {
      'x-shopify-hmac-sha256': getHmac(payload, key),
      'x-shopify-topic': 'orders/create',
      'x-shopify-event-id': '98880550-7158-44d4-b7cd-2c97c8a091b5',
      'x-shopify-webhook-id': 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043',
      'x-shopify-shop-domain': 'example.myshopify.com',
      'x-shopify-api-version': ApiVersion.January25,
      'content-type': 'application/json',
    },
  };
}

/** @shopify/shopify-api's own webhooks.validate, set up with `key` as the app's secret. */
function shopifyValidate(key: string) {
  const api = shopifyApi({
    apiKey: 'test-key',
    apiSecretKey: key,
    apiVersion: ApiVersion.January25,
    hostName: 'example.com',
    isEmbeddedApp: false,
    logger: { log: () => {} },
  });
  return (text: string, headers: Record<string, string>) =>
    api.webhooks.validate({
      rawBody: text,
      rawRequest: new Request('https://example.com/webhooks', { method: 'POST', headers, body: text }),
    });
}

describe("shopify provider (signed by @shopify/shopify-api's getHmac test helper)", () => {
  providerCases<string>({
    name: 'shopify',
    credential: oneSecret(secret),
    make: (config) => shopify({ secret: config }),
    body,
    sign,
    expect: {
      dedup: 'body',
      id: '98880550-7158-44d4-b7cd-2c97c8a091b5',
      type: 'orders/create',
      typeSigned: false,
    },
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

  it("agrees with @shopify/shopify-api's own webhooks.validate on the same request", async () => {
    const key = secret();
    const d = sign(body(), key);
    const validate = shopifyValidate(key);
    const check = async (delivery: Delivery) =>
      (await validate(delivery.body as string, delivery.headers)).valid;
    assert.equal(await check(d), true);
    await verifyAt(shopify({ secret: key }), d);
    const tampered = { ...d, body: (d.body as string).replace('caf', 'cof') };
    assert.equal(await check(tampered), false);
  });

  it("the test kit's deliveries of every sample topic pass @shopify/shopify-api's webhooks.validate; one byte off does not", async () => {
    // webhooks.validate is async, so it runs here rather than among test/sdks/kit.test.ts's checks.
    const key = testSecret('shopify');
    const validate = shopifyValidate(key);
    const { types } = senders.find((s) => s.name === 'shopify')!;
    for (const type of types) {
      const d = signedDelivery('shopify', { secret: key, type });
      const result = await validate(d.text, { ...d.headers });
      assert.equal(result.valid, true, `${type}: ${JSON.stringify(result)}`);
      assert.equal(result.valid && result.topic, type.replace('/', '_').toUpperCase());
      assert.equal(result.valid && 'eventId' in result && result.eventId, d.id);
      const off = d.text.replace('"id":', '"id":1');
      assert.notEqual(off, d.text);
      assert.equal((await validate(off, { ...d.headers })).valid, false);
    }
  });

  it("reads the Events deliveries' headers (shopify-*, no X-) that @shopify/shopify-api's validate accepts", async () => {
    const key = secret();
    const d = sign(body(), key);
    // The same delivery under the Events header names: shopify-hmac-sha256, shopify-topic, ...
    const events: Record<string, string> = {};
    for (const [name, value] of Object.entries(d.headers))
      events[name.toLowerCase().replace(/^x-shopify-/, 'shopify-')] = value;
    events['shopify-event-id'] = 'evt-events-1';
    assert.ok(!Object.keys(events).some((name) => name.startsWith('x-shopify-')));
    assert.equal((await shopifyValidate(key)(d.body as string, events)).valid, true);
    const verified = await verifyAt(shopify({ secret: key }), { ...d, headers: events });
    assert.equal(verified.type, events['shopify-topic']);
    assert.equal(verified.id, 'evt-events-1');
    await rejects(
      shopify({ secret: key }),
      { ...d, headers: { ...events, 'shopify-hmac-sha256': 'AAAA' } },
      'invalid_signature',
    );
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
