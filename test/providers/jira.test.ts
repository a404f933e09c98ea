import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { jira } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, oneSecret, providerCases, TRICKY_JSON, withHeader } from './kit.js';

// Jira's documented algorithm (https://developer.atlassian.com/cloud/jira/platform/webhooks/,
// "Secure admin webhooks"): X-Hub-Signature: sha256=<hex HMAC-SHA256 of the raw body>, WebSub style;
// signed by the test kit (onceonly/testing's signedDelivery).
const secret = () => randomBytes(24).toString('base64url');
const body = () =>
  `{"timestamp": 1764478800000, "webhookEvent": "jira:issue_created", "issue": {"id": "10001", "fields": {"summary": ${TRICKY_JSON}}}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('jira', { payload, secret: key, id: '7c1d0d3e-1f2a-4b3c-9d8e-000000000003' });
  return { body: d.text, headers: { ...d.headers } };
}

describe('jira provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'jira',
    credential: oneSecret(secret),
    make: (config) => jira({ secret: config }),
    body,
    sign,
    expect: {
      dedup: 'body',
      id: '7c1d0d3e-1f2a-4b3c-9d8e-000000000003',
      type: 'jira:issue_created',
      typeSigned: true,
    },
    noteOf: (event) => (event as { issue: { fields: { summary: unknown } } }).issue.fields.summary,
    toleranceMs: undefined,
    freshIdHeader: (d) => withHeader(d, 'x-atlassian-webhook-identifier', 'fresh-identifier'),
    signatureHeader: 'x-hub-signature',
    malformed: ['ATATT3xFfGF0abc', 'ATCTT3xFfGF0abc', '  '],
  });

  it('defaults retention to 2 days (up to 5 retries with backoff)', () => {
    assert.equal(jira({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});
