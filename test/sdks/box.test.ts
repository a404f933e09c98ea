import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { computeWebhookSignature } from 'box-node-sdk/internal';
import { WebhooksManager } from 'box-node-sdk/managers/webhooks';
import { box } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  acceptsBoth,
  type Delivery,
  NOW,
  rejectsBoth,
  TRICKY_JSON,
  TRICKY_TEXT,
  withHeader,
} from '../providers/kit.js';

// The signatures here are computed by box-node-sdk's own code (computeWebhookSignature, what
// WebhooksManager.validateMessage checks against), and box-node-sdk verifies what onceonly accepts.
const key = () => randomBytes(24).toString('base64url');
const ID = '0f46a6ca-86bf-44ab-8cf5-f08e1e02876b';
const body = () =>
  `{"type": "webhook_event", "id": "${ID}", "created_at": "2026-11-30T05:00:00-08:00", "trigger": "FILE.UPLOADED", "webhook": {"id": "53", "type": "webhook"}, "source": {"id": "73835521473", "type": "file", "name": ${TRICKY_JSON}}}`;
const rfc3339 = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, '+00:00');
const TOLERANCE = 10 * 60_000;

/** A delivery whose two signature headers box-node-sdk computed, primary under `primary`, secondary under `secondary`. */
async function sdkSign(payload: string, primary: string, at: Date, secondary = key()): Promise<Delivery> {
  const headers: Record<string, string> = {
    'box-delivery-id': '462fc1b2-7bc5-4e50-a4bc-5f6c2a6a1c7c',
    'box-delivery-timestamp': rfc3339(at),
    'box-signature-algorithm': 'HmacSHA256',
    'box-signature-version': '1',
  };
  const [p, s] = [
    await computeWebhookSignature(payload, headers, primary),
    await computeWebhookSignature(payload, headers, secondary),
  ];
  assert.ok(p && s, 'box-node-sdk computed both signatures');
  return {
    body: payload,
    headers: { ...headers, 'box-signature-primary': p, 'box-signature-secondary': s },
  };
}

/** box-node-sdk's verdict on a delivery, against the real clock (it has no receivedAt). */
function sdkValid(d: Delivery, primary: string, secondary?: string): Promise<boolean> {
  return WebhooksManager.validateMessage(d.body as string, d.headers, primary, { secondaryKey: secondary });
}

/** onceonly's test kit (signedDelivery), as test/providers/box.test.ts signs. */
function testSign(payload: string, k: string, at: Date): Delivery {
  const d = signedDelivery('box', { payload, secret: k, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('box provider (signed by box-node-sdk computeWebhookSignature, checked against WebhooksManager.validateMessage)', () => {
  it('verifies and authenticates a delivery box-node-sdk signed, keyed on the signed id', async () => {
    const k = key();
    const verified = await acceptsBoth(box({ secret: k }), await sdkSign(body(), k, NOW));
    assert.equal(verified.dedup, 'id');
    assert.equal(verified.id, ID);
    assert.equal(verified.type, 'FILE.UPLOADED');
    assert.equal(verified.typeSigned, true);
    assert.equal((verified.event as { source: { name: string } }).source.name, TRICKY_TEXT);
  });

  it("agrees with validateMessage both ways: on what the SDK signed and on what onceonly's test kit signed", async () => {
    const k = key();
    const now = new Date();
    const signed = await sdkSign(body(), k, now);
    assert.equal(await sdkValid(signed, k), true);
    await acceptsBoth(box({ secret: k }), signed, now);
    const ours = testSign(body(), k, now);
    assert.equal(await sdkValid(ours, k), true);
    // The SDK signs the kit's own headers (its timestamp is written at UTC-8): the same signature.
    assert.equal(
      ours.headers['box-signature-primary'],
      await computeWebhookSignature(ours.body as string, ours.headers, k),
    );
  });

  it('verifies through the secondary key the SDK signed with while the primary is rotated', async () => {
    const [primary, secondary] = [key(), key()];
    const now = new Date();
    const d = await sdkSign(body(), primary, now, secondary);
    assert.equal(await sdkValid(d, key(), secondary), true);
    await acceptsBoth(box({ secret: secondary }), d, now);
    await acceptsBoth(box({ secret: [primary, secondary] }), d, now);
  });

  it('refuses a tampered body as invalid_signature, as the SDK does', async () => {
    const k = key();
    const now = new Date();
    const d = await sdkSign(body(), k, now);
    const tampered = { ...d, body: (d.body as string).replace('caf', 'cof') };
    assert.equal(await sdkValid(tampered, k), false);
    await rejectsBoth(box({ secret: k }), tampered, 'invalid_signature', now);
  });

  it('refuses a delivery signed under another key as invalid_signature, as the SDK does', async () => {
    const [k, other] = [key(), key()];
    const now = new Date();
    const d = await sdkSign(body(), other, now);
    assert.equal(await sdkValid(d, k, key()), false);
    await rejectsBoth(box({ secret: k }), d, 'invalid_signature', now);
  });

  it('refuses a changed delivery timestamp (the SDK signs it) as invalid_signature', async () => {
    const k = key();
    const now = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
    const d = await sdkSign(body(), k, now);
    const moved = withHeader(d, 'box-delivery-timestamp', rfc3339(new Date(now.getTime() + 1000)));
    assert.equal(await sdkValid(moved, k), false);
    await rejectsBoth(box({ secret: k }), moved, 'invalid_signature', now);
  });

  it("refuses a delivery older than 10 minutes as timestamp_too_old, the SDK's own maxAge", async () => {
    const k = key();
    const stale = await sdkSign(body(), k, new Date(NOW.getTime() - TOLERANCE - 10_000));
    await rejectsBoth(box({ secret: k }), stale, 'timestamp_too_old');
    const justInside = await sdkSign(body(), k, new Date(NOW.getTime() - TOLERANCE + 10_000));
    await acceptsBoth(box({ secret: k }), justInside);
    // The SDK against the real clock: the same ages on either side of its 600 s.
    const now = Date.now();
    assert.equal(await sdkValid(await sdkSign(body(), k, new Date(now - TOLERANCE - 10_000)), k), false);
    assert.equal(await sdkValid(await sdkSign(body(), k, new Date(now - TOLERANCE + 10_000)), k), true);
  });

  it('refuses a delivery dated more than 10 minutes ahead as timestamp_too_new (the SDK refuses any future date; onceonly allows clock skew)', async () => {
    const k = key();
    const ahead = await sdkSign(body(), k, new Date(NOW.getTime() + TOLERANCE + 10_000));
    await rejectsBoth(box({ secret: k }), ahead, 'timestamp_too_new');
    const skewed = await sdkSign(body(), k, new Date(NOW.getTime() + 60_000));
    await acceptsBoth(box({ secret: k }), skewed);
    assert.equal(await sdkValid(await sdkSign(body(), k, new Date(Date.now() + 60_000)), k), false);
  });

  it("refuses a body re-serialised by a framework, which the SDK's PHP-escape fallback lets through", async () => {
    // Box sends PHP json_encode output: non-ASCII as \uXXXX, "/" as "\/". Given a body a framework
    // parsed and re-stringified, validateMessage re-escapes it and matches; onceonly checks the raw
    // bytes only, so the re-serialised body is refused and the bytes Box sent verify.
    const k = key();
    const sent = `{"type":"webhook_event","id":"${ID}","trigger":"FILE.UPLOADED","source":{"type":"file","name":"caf\\u00e9 \\/ r\\u00e9sum\\u00e9.pdf"}}`;
    const now = new Date();
    const d = await sdkSign(sent, k, now);
    const reserialised = { ...d, body: JSON.stringify(JSON.parse(sent)) };
    assert.notEqual(reserialised.body, sent);
    assert.equal(await sdkValid(reserialised, k), true);
    await rejectsBoth(box({ secret: k }), reserialised, 'invalid_signature', now);
    const verified = await acceptsBoth(box({ secret: k }), d, now);
    assert.equal((verified.event as { source: { name: string } }).source.name, 'café / résumé.pdf');
  });

  it('refuses a delivery without either signature header as missing_header', async () => {
    const k = key();
    const d = await sdkSign(body(), k, NOW);
    const bare = withHeader(
      withHeader(d, 'box-signature-primary', undefined),
      'box-signature-secondary',
      undefined,
    );
    await rejectsBoth(box({ secret: k }), bare, 'missing_header');
  });
});
