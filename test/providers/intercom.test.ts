import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { intercom } from '../../src/providers/index.js';
import type { Verified } from '../../src/providers/types.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  type Delivery,
  oneSecret,
  providerCases,
  receiveAll,
  rejects,
  TRICKY_JSON,
  verifyAt,
} from './kit.js';

// Intercom's documented algorithm: X-Hub-Signature: sha1=hex(HMAC-SHA1(client secret, raw body)),
// signed by the test kit (onceonly/testing's signedDelivery).
const secret = () => randomBytes(16).toString('hex');
const body = (attempts = 1) =>
  `{"type": "notification_event", "app_id": "abc", "id": "notif_ccd8a4d0", "topic": "conversation.user.created", "delivery_attempts": ${attempts}, "first_sent_at": 1764478800, "data": {"item": {"body": ${TRICKY_JSON}}}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('intercom', { payload, secret: key });
  return { body: d.text, headers: { ...d.headers } };
}

describe('intercom provider (signed by the test kit, the documented algorithm)', () => {
  providerCases<string>({
    name: 'intercom',
    credential: oneSecret(secret),
    make: (config) => intercom({ secret: config }),
    body: () => body(),
    sign,
    expect: { dedup: 'id', id: 'notif_ccd8a4d0', type: 'conversation.user.created', typeSigned: true },
    noteOf: (event) => (event as { data: { item: { body: unknown } } }).data.item.body,
    toleranceMs: undefined,
    signatureHeader: 'x-hub-signature',
    malformed: ['dG9rOjAxMjM0NTY3ODk=', '', ' '],
  });

  it('gives a retry (delivery_attempts bumped) the same key and the same content fingerprint', async () => {
    const key = secret();
    const first = (await verifyAt(intercom({ secret: key }), sign(body(1), key))) as Verified;
    const retry = (await verifyAt(intercom({ secret: key }), sign(body(2), key))) as Verified;
    assert.equal(first.id, retry.id);
    assert.match(first.fingerprint ?? '', /^[0-9a-f]{64}$/);
    assert.equal(first.fingerprint, retry.fingerprint);
  });

  it('answers a retry with delivery_attempts bumped as a duplicate, not a conflict, through the receiver', async () => {
    const key = secret();
    const { results, runs } = await receiveAll(intercom({ secret: key }), [
      sign(body(1), key),
      sign(body(2), key),
    ]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    assert.equal(runs, 1);
  });

  it('rejects a signed notification without an id as missing_event_id', async () => {
    const key = secret();
    await rejects(
      intercom({ secret: key }),
      sign('{"type":"notification_event","topic":"x"}', key),
      'missing_event_id',
    );
  });

  it('defaults retention to 3 days (retry window undocumented)', () => {
    assert.equal(intercom({ secret: secret() }).retentionMs, 3 * 86_400_000);
  });
});
