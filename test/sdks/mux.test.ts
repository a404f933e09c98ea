import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import Mux from '@mux/mux-node';
import { mux } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  type Delivery,
  oneSecret,
  providerCases,
  receiveAll,
  TRICKY_JSON,
  verifyAt,
  withHeader,
} from '../providers/kit.js';

// Mux's algorithm (https://docs.mux.com/core/verify-webhook-signatures): Mux-Signature:
// t=<seconds>,v1=<hex HMAC-SHA256 of `t.body`>. Cross-checked below against @mux/mux-node's own
// webhooks.computeSignature (its signing helper, async) and webhooks.verifySignature. Signed by the
// test kit (signedDelivery); the header with several v1= by hand.
const client = new Mux({ tokenId: 'test-token-id', tokenSecret: 'test-token-secret' });
const secret = () => randomBytes(24).toString('base64url');
const body = (attempts = 0) =>
  `{"type": "video.asset.ready", "id": "3a56ac3d-33da-4366-855b-f592d898409d", "object": {"type": "asset", "id": "a1"}, "data": {"passthrough": ${TRICKY_JSON}}, "attempts": [${Array.from({ length: attempts }, (_, i) => `{"id": "att${i}"}`).join(', ')}], "created_at": "2026-11-30T05:00:00.000Z"}`;

function sign(payload: string, key: string, at: Date): Delivery {
  const d = signedDelivery('mux', { payload, secret: key, at });
  return { body: d.text, headers: { ...d.headers } };
}

describe('mux provider (signed by the test kit, as @mux/mux-node computes it)', () => {
  providerCases<string>({
    name: 'mux',
    credential: oneSecret(secret),
    make: (config) => mux({ secret: config }),
    body: () => body(),
    sign,
    expect: {
      dedup: 'id',
      id: '3a56ac3d-33da-4366-855b-f592d898409d',
      type: 'video.asset.ready',
      typeSigned: true,
    },
    noteOf: (event) => (event as { data: { passthrough: unknown } }).data.passthrough,
    toleranceMs: 5 * 60_000,
    several: (payload, good, bad, at) => {
      const v1 = (k: string) => sign(payload, k, at).headers['mux-signature']!.split(',v1=')[1];
      const t = Math.floor(at.getTime() / 1000);
      return {
        body: payload,
        headers: { 'mux-signature': `t=${t},v1=${v1(bad[0]!)},v1=${v1(good)},v1=${v1(bad[1]!)}` },
      };
    },
    signatureHeader: 'mux-signature',
    malformed: ['', ' '],
  });

  it("signs as @mux/mux-node's computeSignature does, and its verifySignature accepts our deliveries", async () => {
    const key = secret();
    const now = new Date();
    const d = sign(body(), key, now);
    const t = Math.floor(now.getTime() / 1000);
    // computeSignature is private in the SDK's types but is the helper verifySignature signs with.
    const signer = client.webhooks as unknown as { computeSignature(p: string, k: string): Promise<string> };
    const theirs = await signer.computeSignature(`${t}.${d.body as string}`, key);
    assert.equal(d.headers['mux-signature'], `t=${t},v1=${theirs}`);
    await client.webhooks.verifySignature(d.body as string, d.headers, key);
    await verifyAt(mux({ secret: key }), d, now);
    await assert.rejects(client.webhooks.verifySignature(d.body as string, d.headers, secret()));
  });

  it('takes a retry whose attempts list grew as a duplicate', async () => {
    const key = secret();
    const at = new Date();
    const { results, runs } = await receiveAll(
      mux({ secret: key }),
      [sign(body(0), key, at), sign(body(2), key, at)],
      at,
    );
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    assert.equal(runs, 1);
  });

  it('refuses a list with two t= timestamps as malformed_header', async () => {
    const key = secret();
    const d = sign(body(), key, new Date());
    await assert.rejects(
      verifyAt(mux({ secret: key }), withHeader(d, 'mux-signature', `t=1,${d.headers['mux-signature']}`)),
      /more than one t=/,
    );
  });

  it('defaults retention to 2 days (retries for 24 hours)', () => {
    assert.equal(mux({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});
