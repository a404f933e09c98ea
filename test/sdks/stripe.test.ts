import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import Stripe from 'stripe';
import { ConfigError } from '../../src/index.js';
import { stripe } from '../../src/providers/index.js';
import {
  type Delivery,
  NOW,
  providerCases,
  receiveAll,
  rejects,
  TRICKY_JSON,
  verifyAt,
  withHeader,
} from '../providers/kit.js';

const sdk = new Stripe('sk_test_only_used_to_reach_webhooks_helpers');
const secret = () => `whsec_${randomBytes(24).toString('hex')}`;

function body(id = 'evt_1NqHnD2eZvKYlo2C', type = 'invoice.paid'): string {
  return `{\n  "id": "${id}",\n  "object": "event",\n  "api_version": "2025-01-27",\n  "created": 1764478800,\n  "data": {\n    "object": { "id": "in_1", "object": "invoice", "note": ${TRICKY_JSON} }\n  },\n  "livemode": false,\n  "type": "${type}"\n}`;
}

function sign(payload: string, key: string, at: Date): Delivery {
  const header = sdk.webhooks.generateTestHeaderString({
    payload,
    secret: key,
    timestamp: Math.floor(at.getTime() / 1000),
  });
  return { body: payload, headers: { 'stripe-signature': header, 'content-type': 'application/json' } };
}

function v1Of(d: Delivery): string {
  return /v1=([0-9a-f]+)/.exec(d.headers['stripe-signature'] ?? '')?.[1] ?? '';
}

describe('stripe provider (signed by stripe-node generateTestHeaderString)', () => {
  providerCases<string>({
    name: 'stripe',
    credential: () => {
      const s = secret();
      return { signer: s, config: s };
    },
    make: (config) => stripe({ secret: config }),
    body: () => body(),
    sign,
    expect: { dedup: 'id', id: 'evt_1NqHnD2eZvKYlo2C', type: 'invoice.paid', typeSigned: true },
    noteOf: (event) => (event as { data: { object: { note: unknown } } }).data.object.note,
    toleranceMs: 5 * 60_000,
    several: (payload, good, bad, at) => {
      const t = Math.floor(at.getTime() / 1000);
      const sigs = [bad[0]!, good, bad[1]!].map((k) => `v1=${v1Of(sign(payload, k, at))}`);
      return { body: payload, headers: { 'stripe-signature': `t=${t},${sigs.join(',')}` } };
    },
    signatureHeader: 'stripe-signature',
    malformed: ['sk_live_abc123', 'rk_test_abc', 'pk_test_abc', 'whsec_', 'whsec_has space', '   '],
  });

  it('agrees with stripe.webhooks.constructEvent on a valid delivery', async () => {
    const key = secret();
    const d = sign(body(), key, new Date());
    const theirs = sdk.webhooks.constructEvent(d.body as string, d.headers['stripe-signature']!, key);
    const ours = await verifyAt(stripe({ secret: key }), d, new Date());
    assert.deepEqual(ours.event, theirs);
  });

  it("accepts the secrets stripe-node itself signs with, such as 'whsec_test_secret'", async () => {
    for (const key of ['whsec_test_secret', 'whsec_a-b.c', 'a_secret_without_the_prefix']) {
      const d = sign(body(), key, new Date());
      sdk.webhooks.constructEvent(d.body as string, d.headers['stripe-signature']!, key);
      await verifyAt(stripe({ secret: key }), d, new Date());
    }
  });

  it('keys on the signed event id, so two deliveries of one event share a key', async () => {
    const key = secret();
    const first = await verifyAt(stripe({ secret: key }), sign(body(), key, NOW));
    const retry = await verifyAt(
      stripe({ secret: key }),
      sign(body(), key, new Date(NOW.getTime() + 1000)),
      NOW,
    );
    assert.equal(first.id, retry.id);
  });

  it('rejects a header without t= as malformed_header', async () => {
    const key = secret();
    const d = sign(body(), key, NOW);
    const header = d.headers['stripe-signature']!.replace(/^t=\d+,/, '');
    await rejects(stripe({ secret: key }), withHeader(d, 'stripe-signature', header), 'malformed_header');
  });

  it('ignores signatures of other schemes (v0=) and rejects a header with none of v1 as malformed_header', async () => {
    const key = secret();
    const d = sign(body(), key, NOW);
    const header = d.headers['stripe-signature']!.replace('v1=', 'v0=');
    await rejects(stripe({ secret: key }), withHeader(d, 'stripe-signature', header), 'malformed_header');
  });

  it('rejects a signed event without an id as missing_event_id', async () => {
    const key = secret();
    await rejects(
      stripe({ secret: key }),
      sign('{"object":"event","type":"x"}', key, NOW),
      'missing_event_id',
    );
  });

  it('rejects a signed body that is not a JSON object as invalid_body', async () => {
    const key = secret();
    await rejects(stripe({ secret: key }), sign('[1,2]', key, NOW), 'invalid_body');
    await rejects(stripe({ secret: key }), sign('{"id":', key, NOW), 'invalid_body');
  });

  it('trims a trailing newline from a secret pasted from an env file', async () => {
    const key = secret();
    await verifyAt(stripe({ secret: `${key}\n` }), sign(body(), key, NOW));
  });

  it('names the mistake when an API key is given instead of the signing secret', () => {
    assert.throws(
      () => stripe({ secret: 'sk_live_51Habc' }),
      (e: unknown) => e instanceof ConfigError && /API key/.test(e.message) && !e.message.includes('51Habc'),
    );
  });

  it('defaults retention to 4 days (Stripe retries for 3) and lets it be overridden', () => {
    assert.equal(stripe({ secret: secret() }).retentionMs, 4 * 86_400_000);
    assert.equal(stripe({ secret: secret(), retention: '30d' }).retentionMs, 30 * 86_400_000);
  });

  it('processes a queued delivery hours later when the receiver is given the time it arrived', async () => {
    const key = secret();
    const arrived = new Date(NOW.getTime() - 3 * 3_600_000);
    const d = sign(body(), key, arrived);
    const late = await receiveAll(stripe({ secret: key }), [d]);
    assert.equal(late.results[0]?.code, 'timestamp_too_old');
    const queued = await receiveAll(stripe({ secret: key }), [d], new Date(arrived.getTime() + 2_000));
    assert.equal(queued.results[0]?.outcome, 'processed');
  });

  it('applies a configured tolerance', async () => {
    const key = secret();
    const at = new Date(NOW.getTime() - 2 * 60_000);
    await rejects(stripe({ secret: key, tolerance: '1m' }), sign(body(), key, at), 'timestamp_too_old');
  });
});
