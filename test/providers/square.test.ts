import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { square } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, NOW, oneSecret, providerCases, rejects, TRICKY_JSON, verifyAt } from './kit.js';

// Signed by the test kit (signedDelivery), which signs as Square documents:
// x-square-hmacsha256-signature: base64(HMAC-SHA256(signature key, notification URL + raw body)).
const URL = 'https://example.com/webhooks/square';
const secret = () => randomBytes(16).toString('base64url');
const body = () =>
  `{"merchant_id": "6SSW7HV8K2ST5", "type": "payment.updated", "event_id": "13b867cf-db3d-4b1c-90b6-2f32a9d78124", "created_at": "2026-11-30T05:00:00Z", "data": {"type": "payment", "id": "KkAkhdMs", "object": {"note": ${TRICKY_JSON}}}}`;

function sign(payload: string, key: string, url = URL): Delivery {
  const d = signedDelivery('square', { payload, secret: key, url, at: NOW });
  return { body: d.text, url: d.url, headers: { ...d.headers } };
}

describe('square provider (signed by the test kit)', () => {
  providerCases<string>({
    name: 'square',
    credential: oneSecret(secret),
    make: (config) => square({ secret: config }),
    body,
    sign: (payload, key) => sign(payload, key),
    expect: {
      dedup: 'id',
      id: '13b867cf-db3d-4b1c-90b6-2f32a9d78124',
      type: 'payment.updated',
      typeSigned: true,
    },
    noteOf: (event) => (event as { data: { object: { note: unknown } } }).data.object.note,
    toleranceMs: undefined,
    signatureHeader: 'x-square-hmacsha256-signature',
    malformed: ['EAAAl0123456789', 'sq0csp-abc', '', ' '],
  });

  it('rejects a delivery signed for another notification URL as invalid_signature', async () => {
    const key = secret();
    await rejects(
      square({ secret: key }),
      { ...sign(body(), key, 'https://evil.example/hook'), url: URL },
      'invalid_signature',
    );
  });

  it('verifies against the configured notificationUrl when a proxy changed the request URL', async () => {
    const key = secret();
    const d = { ...sign(body(), key), url: 'http://10.0.0.7:3000/webhooks/square' };
    await rejects(square({ secret: key }), d, 'invalid_signature');
    await verifyAt(square({ secret: key, notificationUrl: URL }), d);
  });

  it('refuses to verify without any URL, as a configuration error', async () => {
    const key = secret();
    await assert.rejects(
      verifyAt(square({ secret: key }), { ...sign(body(), key), url: undefined }),
      ConfigError,
    );
  });

  it('refuses a notificationUrl that is not a full http(s) URL at construction', () => {
    assert.throws(() => square({ secret: secret(), notificationUrl: '/webhooks/square' }), ConfigError);
  });

  it('rejects a signed event without event_id as missing_event_id', async () => {
    const key = secret();
    await rejects(
      square({ secret: key }),
      sign('{"type":"payment.updated","data":{}}', key),
      'missing_event_id',
    );
  });

  it('defaults retention to 2 days (Square retries for 24 hours)', () => {
    assert.equal(square({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});
