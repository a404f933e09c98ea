import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { createReceiver } from '../../src/index.js';
import { notion } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, NOW, oneSecret, providerCases, receiveAll, TRICKY_JSON, verifyAt } from './kit.js';
import { countingStore } from './storeSpy.js';

// Signed by the test kit (signedDelivery), which signs as Notion documents
// (https://developers.notion.com/reference/webhooks#step-3-validating-event-payloads-recommended):
// X-Notion-Signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the verification_token>.
const secret = () => `secret_${randomBytes(32).toString('base64url')}`;
const body = (attempt = 1) =>
  `{"id": "367cba44-b6f3-4c92-81e7-6a2e9659efd4", "timestamp": "2026-11-30T05:00:00.000Z", "workspace_id": "w1", "subscription_id": "s1", "integration_id": "i1", "type": "page.created", "authors": [{"id": "u1", "type": "person"}], "entity": {"id": "153104cd-477e-809d-8dc4-ff2d96ae3090", "type": "page"}, "data": {"parent": {"id": "p1", "type": "space"}, "note": ${TRICKY_JSON}}, "attempt_number": ${attempt}}`;

function sign(payload: string, key: string): Delivery {
  const d = signedDelivery('notion', { payload, secret: key, at: NOW });
  return { body: d.text, headers: { ...d.headers } };
}

describe('notion provider (signed by the test kit)', () => {
  providerCases<string>({
    name: 'notion',
    credential: oneSecret(secret),
    make: (config) => notion({ secret: config }),
    body: () => body(),
    sign,
    expect: {
      dedup: 'id',
      id: '367cba44-b6f3-4c92-81e7-6a2e9659efd4',
      type: 'page.created',
      typeSigned: true,
    },
    noteOf: (event) => (event as { data: { note: unknown } }).data.note,
    toleranceMs: undefined,
    signatureHeader: 'x-notion-signature',
    malformed: ['ntn_1234567890abcdef', ' '],
  });

  it('answers the unsigned set-up request with 200, hands over its token, and touches neither store nor handler', async () => {
    const seen: string[] = [];
    let runs = 0;
    const { store: counted, calls } = countingStore();
    const receiver = createReceiver({
      provider: notion({ secret: 'pending', onVerificationToken: (t) => void seen.push(t) }),
      store: counted,
      handler: () => {
        runs += 1;
      },
    });
    const result = await receiver.receive({
      method: 'POST',
      rawBody: '{"verification_token":"secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl"}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(result.outcome, 'handshake');
    assert.equal(result.status, 200);
    assert.deepEqual(seen, ['secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl']);
    assert.equal(runs, 0);
    assert.equal(calls(), 0);
  });

  it('takes nothing else for the set-up request: a signed delivery, or a body with more fields', async () => {
    const key = secret();
    const seen: string[] = [];
    const provider = notion({ secret: key, onVerificationToken: (t) => void seen.push(t) });
    const request = (d: Delivery) => ({
      method: 'POST',
      rawBody: new TextEncoder().encode(d.body as string),
      headers: new Headers(d.headers),
      receivedAt: new Date(),
    });
    assert.equal(await provider.handshake?.(request(sign('{"verification_token":"x"}', key))), undefined);
    assert.equal(
      await provider.handshake?.(
        request({ body: '{"verification_token":"x","type":"page.created"}', headers: {} }),
      ),
      undefined,
    );
    assert.deepEqual(seen, []);
  });

  it("hands over only a token of Notion's shape: newlines, ESC, 900 kB or another alphabet are refused as unsigned deliveries", async () => {
    // Prepare: a receiver whose callback records what it is given, and set-up requests anyone can send.
    const seen: string[] = [];
    const { store: counted, calls } = countingStore();
    const receiver = createReceiver({
      provider: notion({ secret: 'pending', onVerificationToken: (t) => void seen.push(t) }),
      store: counted,
      handler: () => {},
      logger: false,
    });
    const hostile = [
      'secret_abcdefghijklmnop\nonceonly: processed stripe:evt_fake',
      'secret_abcdefghijklmnop\u001b[2J\u001b]0;owned\u0007',
      `secret_${'a'.repeat(900_000)}`,
      'secret_abc',
      'tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl',
      'secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl\u2028',
    ];
    for (const token of hostile) {
      // Act
      const result = await receiver.receive({
        method: 'POST',
        rawBody: JSON.stringify({ verification_token: token }),
        headers: { 'content-type': 'application/json' },
      });
      // Assess: a stable 4xx, neither callback, store nor handler.
      assert.equal(result.outcome, 'rejected', token.slice(0, 60));
      assert.equal(result.code, 'missing_header');
      assert.equal(result.status, 400);
    }
    assert.deepEqual(seen, []);
    assert.equal(calls(), 0);
  });

  it('takes a retry (attempt_number counted up) as a duplicate', async () => {
    const key = secret();
    const first = await verifyAt(notion({ secret: key }), sign(body(1), key));
    const retry = await verifyAt(notion({ secret: key }), sign(body(2), key));
    assert.equal(first.fingerprint, retry.fingerprint);
    const { results } = await receiveAll(notion({ secret: key }), [sign(body(1), key), sign(body(2), key)]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
  });

  it('defaults retention to 3 days', () => {
    assert.equal(notion({ secret: secret() }).retentionMs, 3 * 86_400_000);
  });
});
