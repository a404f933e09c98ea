import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { sentry } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, rejectsBoth, TRICKY_JSON, withHeader } from './kit.js';

// Signed by the test kit (signedDelivery), which signs as Sentry documents
// (https://docs.sentry.io/organization/integrations/integration-platform/webhooks/, "Verifying the
// signature"): Sentry-Hook-Signature: <hex HMAC-SHA256 of the body, client secret>; the resource,
// Request-ID and Sentry-Hook-Timestamp are sent, but not signed.
const secret = () => randomBytes(32).toString('hex');
const body = () =>
  `{"action": "created", "installation": {"uuid": "a8e5d37a"}, "data": {"issue": {"id": "1170820242", "title": ${TRICKY_JSON}}}, "actor": {"type": "application"}}`;

function sign(payload: string, key: string, at: Date): Delivery {
  const id = 'f3a1b2c4-0000-4000-8000-000000000004';
  const d = signedDelivery('sentry', { payload, secret: key, at, id, type: 'issue' });
  return { body: d.text, headers: { ...d.headers } };
}

describe('sentry provider (signed by the test kit)', () => {
  providerCases<string>({
    name: 'sentry',
    credential: oneSecret(secret),
    make: (config) => sentry({ secret: config }),
    body,
    sign,
    expect: { dedup: 'body', id: 'f3a1b2c4-0000-4000-8000-000000000004', type: 'issue', typeSigned: false },
    noteOf: (event) => (event as { data: { issue: { title: unknown } } }).data.issue.title,
    toleranceMs: undefined,
    freshIdHeader: (d) => withHeader(withHeader(d, 'request-id', 'fresh'), 'sentry-hook-timestamp', '1'),
    signatureHeader: 'sentry-hook-signature',
    malformed: ['sntrys_eyJpYXQiOjE3', 'sntryu_0123456789abcdef', ' '],
  });

  it('refuses a delivery without Sentry-Hook-Resource as missing_header', async () => {
    const key = secret();
    await rejectsBoth(
      sentry({ secret: key }),
      withHeader(sign(body(), key, new Date()), 'sentry-hook-resource', undefined),
      'missing_header',
    );
  });

  it('defaults retention to 1 day', () => {
    assert.equal(sentry({ secret: secret() }).retentionMs, 86_400_000);
  });
});
