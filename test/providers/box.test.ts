import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { box } from '../../src/providers/index.js';
import { providerOptions, signedDelivery } from '../../src/testing/index.js';
import {
  acceptsBoth,
  type Delivery,
  NOW,
  oneSecret,
  providerCases,
  rejectsBoth,
  TRICKY_JSON,
  withHeader,
} from './kit.js';

// Box's documented algorithm (https://developer.box.com/guides/webhooks/v2/signatures-v2/):
// BOX-SIGNATURE-PRIMARY / -SECONDARY: base64(HMAC-SHA256(key, body bytes + BOX-DELIVERY-TIMESTAMP)),
// one under each of the app's two keys; the SDKs allow a 10-minute message age. Signed by the test
// kit: the secret is the primary key, and the kit signs the secondary header under a secondary key
// derived from it (providerOptions('box', { secret }) gives both).
const key = () => randomBytes(24).toString('base64url');
const body = () =>
  `{"type": "webhook_event", "id": "0f46a6ca-86bf-44ab-8cf5-f08e1e02876b", "created_at": "2026-11-30T05:00:00-08:00", "trigger": "FILE.UPLOADED", "webhook": {"id": "53", "type": "webhook"}, "source": {"id": "73835521473", "type": "file", "name": ${TRICKY_JSON}}}`;
const rfc3339 = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, '+00:00');

/** Signs with `primary`; the secondary header under the kit's secondary key for it. */
function sign(payload: string, primary: string, at: Date): Delivery {
  const d = signedDelivery('box', { payload, secret: primary, at });
  return { body: d.text, headers: { ...d.headers } };
}

/** The secondary key the kit signs `BOX-SIGNATURE-SECONDARY` with, for `primary`. */
const secondaryOf = (primary: string): string =>
  (providerOptions('box', { secret: primary }).secret as [string, string])[1];

describe('box provider (signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'box',
    credential: oneSecret(key),
    make: (config) => box({ secret: config }),
    body,
    sign: (payload, k, at) => sign(payload, k, at),
    expect: {
      dedup: 'id',
      id: '0f46a6ca-86bf-44ab-8cf5-f08e1e02876b',
      type: 'FILE.UPLOADED',
      typeSigned: true,
    },
    noteOf: (event) => (event as { source: { name: unknown } }).source.name,
    toleranceMs: 10 * 60_000,
    malformed: ['', ' '],
  });

  it('verifies through the secondary key when the primary key is the one being rotated', async () => {
    const primary = key();
    const secondary = secondaryOf(primary);
    const d = sign(body(), primary, NOW);
    await acceptsBoth(box({ secret: [primary, secondary] }), d);
    await acceptsBoth(box({ secret: secondary }), d);
    // Primary header gone (a proxy dropped it): the secondary still verifies.
    await acceptsBoth(box({ secret: secondary }), withHeader(d, 'box-signature-primary', undefined));
  });

  it('refuses a delivery with neither signature header as missing_header', async () => {
    const k = key();
    const d = withHeader(
      withHeader(sign(body(), k, NOW), 'box-signature-primary', undefined),
      'box-signature-secondary',
      undefined,
    );
    await rejectsBoth(box({ secret: k }), d, 'missing_header');
  });

  it('refuses a changed delivery timestamp (it is signed) and a non-RFC 3339 one', async () => {
    const k = key();
    const d = sign(body(), k, NOW);
    await rejectsBoth(
      box({ secret: k }),
      withHeader(d, 'box-delivery-timestamp', rfc3339(new Date(NOW.getTime() + 1000))),
      'invalid_signature',
    );
    await rejectsBoth(
      box({ secret: k }),
      withHeader(d, 'box-delivery-timestamp', '1764478800'),
      'malformed_header',
    );
  });

  it('defaults tolerance to 10 minutes (as the SDKs) and retention to 3 days', async () => {
    const k = key();
    const at = new Date(NOW.getTime() - 9 * 60_000);
    await acceptsBoth(box({ secret: k }), sign(body(), k, at));
    assert.equal(box({ secret: k }).retentionMs, 3 * 86_400_000);
  });
});
