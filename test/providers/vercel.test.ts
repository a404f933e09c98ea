import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { vercel } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, NOW, oneSecret, providerCases, rejectsBoth, TRICKY_JSON, withHeader } from './kit.js';

// Signed by the test kit (signedDelivery), which signs as Vercel documents
// (https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks):
// x-vercel-signature: <hex HMAC-SHA1 of the raw body>.
const secret = () => randomBytes(24).toString('base64url');
const body = () =>
  `{"id": "uQHYrLEnJE2jvR", "type": "deployment.succeeded", "createdAt": 1764478800000, "payload": {"name": ${TRICKY_JSON}}, "region": "sfo1"}`;

function sign(payload: string, key: string, at = NOW): Delivery {
  const d = signedDelivery('vercel', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('vercel provider (signed by the test kit)', () => {
  providerCases<string>({
    name: 'vercel',
    credential: oneSecret(secret),
    make: (config) => vercel({ secret: config }),
    body,
    sign,
    expect: { dedup: 'id', id: 'uQHYrLEnJE2jvR', type: 'deployment.succeeded', typeSigned: true },
    noteOf: (event) => (event as { payload: { name: unknown } }).payload.name,
    toleranceMs: undefined,
    signatureHeader: 'x-vercel-signature',
    malformed: ['', ' '],
  });

  it('refuses an HMAC-SHA256 signature (Vercel signs with SHA-1)', async () => {
    const key = secret();
    const sha256 = createHmac('sha256', key).update(body()).digest('hex');
    await rejectsBoth(
      vercel({ secret: key }),
      withHeader(sign(body(), key), 'x-vercel-signature', sha256),
      'invalid_signature',
    );
  });

  it('defaults retention to 3 days', () => {
    assert.equal(vercel({ secret: secret() }).retentionMs, 3 * 86_400_000);
  });
});
