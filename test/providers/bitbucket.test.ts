import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { bitbucket } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, rejectsBoth, TRICKY_JSON, withHeader } from './kit.js';

// Bitbucket's documented algorithm (https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/,
// "Secure webhooks"): X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>, signed by the test
// kit (onceonly/testing's signedDelivery); the legacy sha1= form below by hand.
const secret = () => randomBytes(20).toString('hex');
const body = () =>
  `{"push": {"changes": []}, "repository": {"full_name": "team/repo", "description": ${TRICKY_JSON}}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('bitbucket', {
    payload,
    secret: key,
    type: 'repo:push',
    id: 'b7c8d1f2-0000-4000-8000-000000000001',
  });
  return { body: d.text, headers: { ...d.headers } };
}

describe('bitbucket provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'bitbucket',
    credential: oneSecret(secret),
    make: (config) => bitbucket({ secret: config }),
    body,
    sign,
    expect: {
      dedup: 'body',
      id: 'b7c8d1f2-0000-4000-8000-000000000001',
      type: 'repo:push',
      typeSigned: false,
    },
    noteOf: (event) => (event as { repository: { description: unknown } }).repository.description,
    toleranceMs: undefined,
    freshIdHeader: (d) => withHeader(d, 'x-request-uuid', 'fresh-request-uuid'),
    signatureHeader: 'x-hub-signature',
    malformed: ['ATBBabc123', 'ATATT3xFfGF0abc', ' '],
  });

  it('refuses a delivery without X-Event-Key as missing_header', async () => {
    const key = secret();
    await rejectsBoth(
      bitbucket({ secret: key }),
      withHeader(sign(body(), key), 'x-event-key', undefined),
      'missing_header',
    );
  });

  it('refuses the legacy sha1= form as malformed_header', async () => {
    const key = secret();
    const sha1 = `sha1=${createHmac('sha1', key).update(body()).digest('hex')}`;
    await rejectsBoth(
      bitbucket({ secret: key }),
      withHeader(sign(body(), key), 'x-hub-signature', sha1),
      'malformed_header',
    );
  });

  it('defaults retention to 1 day', () => {
    assert.equal(bitbucket({ secret: secret() }).retentionMs, 86_400_000);
  });
});
