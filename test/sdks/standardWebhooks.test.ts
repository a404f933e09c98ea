import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { standardWebhooks } from '../../src/providers/index.js';
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

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const MSG = 'msg_2ZgJkP9qBq3d1vX0';
const body = () =>
  `{"type": "user.created", "timestamp": "2026-11-30T05:00:00Z", "data": {"note": ${TRICKY_JSON}}}`;
const noteOf = (event: unknown) => (event as { data: { note: unknown } }).data.note;

function signWith(prefix: 'webhook' | 'svix', id = MSG) {
  return (payload: string, key: string, at: Date): Delivery => {
    const signature =
      prefix === 'webhook'
        ? new StandardWebhook(key).sign(id, at, payload)
        : new SvixWebhook(key).sign(id, at, payload);
    return {
      body: payload,
      headers: {
        [`${prefix}-id`]: id,
        [`${prefix}-timestamp`]: String(Math.floor(at.getTime() / 1000)),
        [`${prefix}-signature`]: signature,
      },
    };
  };
}

function several(prefix: 'webhook' | 'svix') {
  return (payload: string, good: string, bad: readonly string[], at: Date): Delivery => {
    const sign = signWith(prefix);
    const sig = (k: string) => sign(payload, k, at).headers[`${prefix}-signature`]!;
    const d = sign(payload, good, at);
    return withHeader(d, `${prefix}-signature`, `${sig(bad[0]!)} v1a,AAAA ${sig(good)} ${sig(bad[1]!)}`);
  };
}

for (const prefix of ['webhook', 'svix'] as const) {
  describe(`standardWebhooks provider with ${prefix}-* headers (signed by ${prefix === 'webhook' ? 'standardwebhooks' : 'svix'} Webhook.sign)`, () => {
    providerCases<string>({
      name: 'standard-webhooks',
      credential: () => {
        const s = secret();
        return { signer: s, config: s };
      },
      make: (config) => standardWebhooks({ secret: config }),
      body,
      sign: signWith(prefix),
      expect: { dedup: 'id', id: MSG, type: 'user.created', typeSigned: true },
      noteOf,
      toleranceMs: 5 * 60_000,
      several: several(prefix),
      signatureHeader: `${prefix}-signature`,
      malformed: ['whsec_***not base64***', 'whsec_', 'with space', '  '],
    });
  });
}

describe('standardWebhooks provider specifics', () => {
  it('agrees with standardwebhooks Webhook.verify on a valid delivery', async () => {
    const key = secret();
    const now = new Date();
    const d = signWith('webhook')(body(), key, now);
    const theirs = new StandardWebhook(key).verify(d.body as string, d.headers);
    const ours = await verifyAt(standardWebhooks({ secret: key }), d, now);
    assert.deepEqual(ours.event, theirs);
  });

  it('accepts the secret without its whsec_ prefix, as the base64 key alone', async () => {
    const key = secret();
    await verifyAt(
      standardWebhooks({ secret: key.slice('whsec_'.length) }),
      signWith('webhook')(body(), key, NOW),
    );
  });

  it('rejects a replay with a fresh webhook-id as invalid_signature, because the id is signed', async () => {
    const key = secret();
    const d = signWith('webhook')(body(), key, NOW);
    await rejects(
      standardWebhooks({ secret: key }),
      withHeader(d, 'webhook-id', 'msg_fresh'),
      'invalid_signature',
    );
  });

  it('uses the webhook-* headers when a sender sends both families', async () => {
    const key = secret();
    const d = signWith('webhook')(body(), key, NOW);
    const both = { ...d, headers: { ...d.headers, 'svix-id': 'msg_other', 'svix-signature': 'v1,AAAA' } };
    assert.equal((await verifyAt(standardWebhooks({ secret: key }), both)).id, MSG);
  });

  it('rejects a delivery with neither webhook-id nor svix-id as missing_header', async () => {
    const key = secret();
    const d = withHeader(signWith('webhook')(body(), key, NOW), 'webhook-id', undefined);
    await rejects(standardWebhooks({ secret: key }), d, 'missing_header');
  });

  it('rejects a header with only asymmetric v1a signatures as malformed_header', async () => {
    const key = secret();
    const d = withHeader(signWith('webhook')(body(), key, NOW), 'webhook-signature', 'v1a,AAAA');
    await rejects(standardWebhooks({ secret: key }), d, 'malformed_header');
  });

  it('rejects a non-integer webhook-timestamp as malformed_header', async () => {
    const key = secret();
    const d = withHeader(signWith('webhook')(body(), key, NOW), 'webhook-timestamp', '2026-11-30');
    await rejects(standardWebhooks({ secret: key }), d, 'malformed_header');
  });

  it('prefixes keys with the configured name, so two senders never share a key', async () => {
    const key = secret();
    const { results } = await receiveAll(standardWebhooks({ secret: key, name: 'clerk' }), [
      signWith('svix')(body(), key, NOW),
    ]);
    assert.equal(results[0]?.key, `clerk:${MSG}`);
  });

  it("defaults retention to 4 days, over Svix's 28 hours and a 3-day sender window", () => {
    assert.equal(standardWebhooks({ secret: secret() }).retentionMs, 4 * 86_400_000);
  });
});
