import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { linear } from '../../src/providers/index.js';
import type { Verified } from '../../src/providers/types.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  type Delivery,
  NOW,
  oneSecret,
  providerCases,
  receiveAll,
  rejects,
  TRICKY_JSON,
  verifyAt,
  withHeader,
} from './kit.js';

// Linear's documented algorithm: Linear-Signature: hex(HMAC-SHA256(secret, raw body)); freshness
// from webhookTimestamp (ms) inside the signed body. Signed by the test kit.
const secret = () => `lin_wh_${randomBytes(20).toString('base64url')}`;
const body = (at: Date) =>
  `{"action": "create", "type": "Issue", "data": {"id": "2174add1", "title": ${TRICKY_JSON}}, "url": "https://linear.app/x", "createdAt": "2026-11-30T05:00:00.000Z", "organizationId": "org1", "webhookTimestamp": ${at.getTime()}, "webhookId": "wh1"}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('linear', { payload, secret: key, id: '234d1a4e-b617-4388-90fe-adc3633d6b72' });
  return { body: d.text, headers: { ...d.headers } };
}

describe('linear provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'linear',
    credential: oneSecret(secret),
    make: (config) => linear({ secret: config }),
    body,
    sign: (payload, key) => sign(payload, key),
    expect: { dedup: 'id', id: '234d1a4e-b617-4388-90fe-adc3633d6b72', type: 'Issue', typeSigned: true },
    noteOf: (event) => (event as { data: { title: unknown } }).data.title,
    toleranceMs: 5 * 60_000,
    freshIdHeader: (d) => withHeader(d, 'linear-delivery', 'fresh-delivery-id'),
    signatureHeader: 'linear-signature',
    // The timestamp is webhookTimestamp inside the body: authenticate must parse it.
    nonJson: 'both-reject',
    malformed: ['lin_api_0123456789', '', '  '],
  });

  it('keys on a digest of the signed body (not the unsigned Linear-Delivery)', async () => {
    const key = secret();
    const verified = await verifyAt(linear({ secret: key }), sign(body(NOW), key));
    assert.match(verified.key ?? '', /^body:[0-9a-f]{64}$/);
  });

  it('gives a retry restamped with a new webhookTimestamp the same key and content fingerprint', async () => {
    const key = secret();
    const later = new Date(NOW.getTime() + 60_000);
    const first = (await verifyAt(linear({ secret: key }), sign(body(NOW), key))) as Verified;
    const retry = (await verifyAt(linear({ secret: key }), sign(body(later), key), later)) as Verified;
    assert.equal(first.key, retry.key);
    assert.equal(first.fingerprint, retry.fingerprint);
  });

  it('answers a restamped retry as a duplicate, not a conflict, through the receiver', async () => {
    const key = secret();
    const later = new Date(NOW.getTime() + 20_000);
    const { results, runs } = await receiveAll(
      linear({ secret: key }),
      [sign(body(NOW), key), sign(body(later), key)],
      later,
    );
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    assert.equal(runs, 1);
  });

  it('gives a different event a different key', async () => {
    const key = secret();
    const other = body(NOW).replace('"action": "create"', '"action": "update"');
    const a = await verifyAt(linear({ secret: key }), sign(body(NOW), key));
    const b = await verifyAt(linear({ secret: key }), sign(other, key));
    assert.notEqual(a.key, b.key);
  });

  it('rejects a signed body without webhookTimestamp as invalid_body', async () => {
    const key = secret();
    await rejects(
      linear({ secret: key }),
      sign('{"type":"Issue","action":"create","data":{}}', key),
      'invalid_body',
    );
  });

  it('defaults retention to 1 day (retries over about 7 hours)', () => {
    assert.equal(linear({ secret: secret() }).retentionMs, 86_400_000);
  });
});
