import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { standardWebhooksFamily } from '../../../src/providers/families/standardWebhooks.js';
import { acceptsBoth, NOW, receiveAll, rejectsBoth, verifyAt } from '../kit.js';
import { assertFamilyProperty } from './property.js';

// A sender built on Standard Webhooks, declared as the next providers (Clerk, Resend, Polar...) will be.
const alias = standardWebhooksFamily({
  name: 'svixish',
  retention: '2d',
  headers: ['svix', 'webhook'],
  type: ['data', 'kind'],
});

const secret = () => `whsec_${randomBytes(32).toString('base64')}`;
const msgId = (n = 1) => `msg_${n}_${randomBytes(4).toString('hex')}`;

function sign(key: string, body: string, at: Date, id = msgId(), prefix = 'svix') {
  const signature = new Webhook(key).sign(id, at, body);
  return {
    [`${prefix}-id`]: id,
    [`${prefix}-timestamp`]: String(Math.floor(at.getTime() / 1000)),
    [`${prefix}-signature`]: signature,
  };
}

describe('Standard Webhooks family', () => {
  it('property: a signature over random bytes verifies; any single-byte change to body, signature, id or timestamp does not', async () => {
    const key = secret();
    const raw = Buffer.from(key.slice(6), 'base64');
    const { createHmac } = await import('node:crypto');
    await assertFamilyProperty({
      provider: alias({ secret: key }),
      sign: (body, at) => {
        const id = msgId();
        const t = String(Math.floor(at.getTime() / 1000));
        const sig = createHmac('sha256', raw).update(`${id}.${t}.`).update(body).digest('base64');
        // One signature: with several, a change to one that does not match rightly still verifies.
        return { headers: { 'svix-id': id, 'svix-timestamp': t, 'svix-signature': `v1,${sig}` } };
      },
      signatureHeader: 'svix-signature',
      signedHeaders: ['svix-id', 'svix-timestamp'],
    });
  });

  it('agrees with the standardwebhooks SDK, keys on the signed id under the declared name, reads the declared type', async () => {
    const key = secret();
    const body = '{"data":{"kind":"user.created"}}';
    const id = msgId();
    const verified = await verifyAt(alias({ secret: key }), { body, headers: sign(key, body, NOW, id) });
    assert.deepEqual(
      { id: verified.id, type: verified.type, dedup: verified.dedup },
      { id, type: 'user.created', dedup: 'id' },
    );
    const { results } = await receiveAll(alias({ secret: key }), [
      { body, headers: sign(key, body, NOW, id) },
      { body, headers: sign(key, body, new Date(NOW.getTime() + 1000), id) },
    ]);
    assert.deepEqual(
      results.map((r) => [r.outcome, r.key]),
      [
        ['processed', `svixish:${id}`],
        ['duplicate', `svixish:${id}`],
      ],
    );
  });

  it('verifies a header whose valid signature is not the first (a rotation: old key first, or v1a before v1), as the SDK does', async () => {
    // Prepare: the valid signature last, after a wrong v1, an asymmetric v1a and an unknown version.
    const key = secret();
    const body = '{"data":{"kind":"user.created"}}';
    const id = msgId();
    const now = new Date();
    const headers = sign(key, body, now, id, 'webhook');
    const valid = headers['webhook-signature']!;
    const wrong = `v1,${randomBytes(32).toString('base64')}`;
    headers['webhook-signature'] = `${wrong} v1a,${randomBytes(64).toString('base64')} v2,xyz ${valid}`;
    // The SDK itself takes it.
    assert.ok(new Webhook(key).verify(body, headers as unknown as Record<string, string>));
    // Act, assess: so does the family, through verify and authenticate; without the valid one, not.
    await acceptsBoth(alias({ secret: key }), { body, headers }, now);
    await rejectsBoth(
      alias({ secret: key }),
      { body, headers: { ...headers, 'webhook-signature': `${wrong} v1a,AAAA` } },
      'invalid_signature',
      now,
    );
  });

  it('reads the header prefixes in the declared order, and refuses a delivery with none', async () => {
    const key = secret();
    const body = '{}';
    const svix = sign(key, body, NOW, msgId(1), 'svix');
    const webhook = sign(key, body, NOW, msgId(2), 'webhook');
    // svix-* first for this sender: a wrong webhook-* trio beside a good svix-* one is ignored.
    const both = { ...svix, 'webhook-id': 'x', 'webhook-timestamp': '1', 'webhook-signature': 'v1,AAAA' };
    assert.equal((await verifyAt(alias({ secret: key }), { body, headers: both })).id, svix['svix-id']);
    assert.equal(
      (await verifyAt(alias({ secret: key }), { body, headers: webhook })).id,
      webhook['webhook-id'],
    );
    await rejectsBoth(alias({ secret: key }), { body, headers: {} }, 'missing_header');
  });

  it('a declaration fixes its name: options cannot rename a named sender', () => {
    const provider = alias({ secret: secret(), name: 'other' });
    assert.equal(provider.name, 'svixish');
    assert.equal(provider.retentionMs, 2 * 86_400_000);
  });
});
