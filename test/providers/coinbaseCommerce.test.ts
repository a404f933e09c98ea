import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { coinbaseCommerce } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, receiveAll, TRICKY_JSON, verifyAt } from './kit.js';

// Coinbase Commerce's documented algorithm (https://docs.cdp.coinbase.com/commerce/docs/webhooks-security):
// X-CC-Webhook-Signature: <hex HMAC-SHA256 of the raw body, keyed with the shared secret>, signed by
// the test kit (onceonly/testing's signedDelivery).
const secret = () => randomUUID();
const body = (attempt = 1) =>
  `{"id": 1, "scheduled_for": "2026-11-30T05:0${attempt}:00Z", "attempt_number": ${attempt}, "event": {"id": "24934862-d980-46cb-9402-43c81b0cdba6", "type": "charge:confirmed", "api_version": "2018-03-22", "data": {"code": "66BEOV2A", "name": ${TRICKY_JSON}}}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('coinbaseCommerce', { payload, secret: key });
  return { body: d.text, headers: { ...d.headers } };
}

describe('coinbaseCommerce provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'coinbase-commerce',
    credential: oneSecret(secret),
    make: (config) => coinbaseCommerce({ secret: config }),
    body: () => body(),
    sign,
    expect: {
      dedup: 'id',
      id: '24934862-d980-46cb-9402-43c81b0cdba6',
      type: 'charge:confirmed',
      typeSigned: true,
    },
    noteOf: (event) => (event as { event: { data: { name: unknown } } }).event.data.name,
    toleranceMs: undefined,
    signatureHeader: 'x-cc-webhook-signature',
    malformed: ['', ' '],
  });

  it('takes a retry (new attempt_number and scheduled_for) as a duplicate, not a conflict', async () => {
    const key = secret();
    const first = await verifyAt(coinbaseCommerce({ secret: key }), sign(body(1), key));
    const retry = await verifyAt(coinbaseCommerce({ secret: key }), sign(body(2), key));
    assert.equal(first.fingerprint, retry.fingerprint);
    const { results, runs } = await receiveAll(coinbaseCommerce({ secret: key }), [
      sign(body(1), key),
      sign(body(2), key),
    ]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    assert.equal(runs, 1);
  });

  it('defaults retention to 4 days (retries for up to three)', () => {
    assert.equal(coinbaseCommerce({ secret: secret() }).retentionMs, 4 * 86_400_000);
  });
});
