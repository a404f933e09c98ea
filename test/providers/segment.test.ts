import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { segment } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, NOW, oneSecret, providerCases, TRICKY_JSON } from './kit.js';

// Signed by the test kit (signedDelivery), which signs as Segment documents
// (https://segment.com/docs/connections/destinations/catalog/webhooks/, "Authentication"):
// X-Signature: <hex HMAC-SHA1 of the raw body, keyed with the shared secret>.
const secret = () => randomBytes(16).toString('hex');
const body = () =>
  `{"messageId": "ajs-next-1764478800000-abc", "type": "track", "event": "Order Completed", "userId": "u1", "properties": {"note": ${TRICKY_JSON}}}`;

function sign(payload: string, key: string, at = NOW): Delivery {
  const d = signedDelivery('segment', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('segment provider (signed by the test kit)', () => {
  providerCases<string>({
    name: 'segment',
    credential: oneSecret(secret),
    make: (config) => segment({ secret: config }),
    body,
    sign,
    expect: { dedup: 'id', id: 'ajs-next-1764478800000-abc', type: 'track', typeSigned: true },
    noteOf: (event) => (event as { properties: { note: unknown } }).properties.note,
    toleranceMs: undefined,
    signatureHeader: 'x-signature',
    malformed: ['', ' '],
  });

  it('defaults retention to 1 day', () => {
    assert.equal(segment({ secret: secret() }).retentionMs, 86_400_000);
  });
});
