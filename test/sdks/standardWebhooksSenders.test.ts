/**
 * The named Standard Webhooks senders (Clerk, Resend, Liveblocks through Svix-style headers; Polar
 * with its UTF-8 keyed secret), each run through the shared provider cases with deliveries signed by
 * `svix` / `standardwebhooks` Webhook.sign: the libraries these senders deliver and verify with.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { clerk, liveblocks, polar, resend } from '../../src/providers/index.js';
import type { Provider } from '../../src/providers/types.js';
import { type Delivery, providerCases, TRICKY_JSON, verifyAt, withHeader } from '../providers/kit.js';

const MSG = 'msg_2ZgJkP9qBq3d1vX0';

interface Sender {
  name: string;
  /** What the suite is called, when the name alone does not say it. */
  title?: string;
  make: (secret: string | string[]) => Provider<any, any>;
  prefix: 'svix' | 'webhook';
  /** A fresh secret as the dashboard shows it. */
  secret: () => string;
  /** The key the signing library is given for that secret. */
  signingKey: (secret: string) => string;
  type: string;
  retentionMs: number;
  lookalikes: string[];
}

const whsec = () => `whsec_${randomBytes(24).toString('base64')}`;
const DAY = 86_400_000;

const senders: Sender[] = [
  {
    name: 'clerk',
    make: (secret) => clerk({ secret }),
    prefix: 'svix',
    secret: whsec,
    signingKey: (s) => s,
    type: 'user.created',
    retentionMs: 2 * DAY,
    lookalikes: ['sk_live_abc123', 'sk_test_abc123', 'pk_test_abc123'],
  },
  {
    name: 'resend',
    make: (secret) => resend({ secret }),
    prefix: 'svix',
    secret: whsec,
    signingKey: (s) => s,
    type: 'email.delivered',
    retentionMs: 2 * DAY,
    lookalikes: ['re_123456789_abcdefghij'],
  },
  {
    name: 'liveblocks',
    make: (secret) => liveblocks({ secret }),
    prefix: 'webhook',
    secret: whsec,
    signingKey: (s) => s,
    type: 'storageUpdated',
    retentionMs: 2 * DAY,
    lookalikes: ['sk_prod_abc123', 'pk_prod_abc123'],
  },
  {
    name: 'polar',
    title: 'polar, an older secret (polar_whs_...: keyed with its UTF-8 bytes)',
    make: (secret) => polar({ secret }),
    prefix: 'webhook',
    secret: () => `polar_whs_${randomBytes(24).toString('base64url')}`,
    // @polar-sh/sdk's validateEvent: `new Webhook(Buffer.from(secret, 'utf-8').toString('base64'))`.
    signingKey: (s) => Buffer.from(s, 'utf8').toString('base64'),
    type: 'order.paid',
    retentionMs: 4 * DAY,
    lookalikes: ['polar_oat_abc123', 'polar_pat_abc123'],
  },
  {
    name: 'polar',
    title: 'polar, a secret made since 2026-09-08 (whsec_ + base64 of 32 bytes: signed per the spec)',
    make: (secret) => polar({ secret }),
    prefix: 'webhook',
    secret: () => `whsec_${randomBytes(32).toString('base64')}`,
    // Polar signs these with standardwebhooks given the secret as it is (polar/webhook/tasks.py).
    signingKey: (s) => s,
    type: 'order.paid',
    retentionMs: 4 * DAY,
    lookalikes: ['polar_oat_abc123', 'polar_pat_abc123'],
  },
];

for (const sender of senders) {
  const body = () =>
    `{"type": "${sender.type}", "timestamp": "2026-11-30T05:00:00Z", "data": {"note": ${TRICKY_JSON}}}`;
  const sign = (payload: string, secret: string, at: Date): Delivery => {
    const key = sender.signingKey(secret);
    const signature =
      sender.prefix === 'svix'
        ? new SvixWebhook(key).sign(MSG, at, payload)
        : new StandardWebhook(key).sign(MSG, at, payload);
    const p = sender.prefix;
    return {
      body: payload,
      headers: {
        [`${p}-id`]: MSG,
        [`${p}-timestamp`]: String(Math.floor(at.getTime() / 1000)),
        [`${p}-signature`]: signature,
      },
    };
  };

  describe(`${sender.title ?? sender.name} provider (Standard Webhooks, signed by ${sender.prefix === 'svix' ? 'svix' : 'standardwebhooks'} Webhook.sign)`, () => {
    providerCases<string>({
      name: sender.name,
      credential: () => {
        const s = sender.secret();
        return { signer: s, config: s };
      },
      make: sender.make,
      body,
      sign,
      expect: { dedup: 'id', id: MSG, type: sender.type, typeSigned: true },
      noteOf: (event) => (event as { data: { note: unknown } }).data.note,
      toleranceMs: 5 * 60_000,
      several: (payload, good, bad, at) => {
        const sig = (k: string) => sign(payload, k, at).headers[`${sender.prefix}-signature`]!;
        return withHeader(
          sign(payload, good, at),
          `${sender.prefix}-signature`,
          `${sig(bad[0]!)} v1a,AAAA ${sig(good)} ${sig(bad[1]!)}`,
        );
      },
      signatureHeader: `${sender.prefix}-signature`,
      malformed: [...sender.lookalikes, '  '],
    });

    it(`names the key space '${sender.name}' and defaults retention to ${sender.retentionMs / DAY} days`, () => {
      const provider = sender.make(sender.secret());
      assert.equal(provider.name, sender.name);
      assert.equal(provider.retentionMs, sender.retentionMs);
    });

    it('says which credential was pasted when a look-alike is given', () => {
      assert.throws(() => sender.make(sender.lookalikes[0]!), /onceonly: .*(key|token)/);
    });

    it('agrees with the signing library’s own verify on the same delivery', async () => {
      const secret = sender.secret();
      const now = new Date();
      const d = sign(body(), secret, now);
      const key = sender.signingKey(secret);
      const theirs =
        sender.prefix === 'svix'
          ? new SvixWebhook(key).verify(d.body as string, d.headers)
          : new StandardWebhook(key).verify(d.body as string, d.headers);
      const ours = await verifyAt(sender.make(secret), d, now);
      assert.deepEqual(ours.event, theirs);
    });
  });
}

/** A Polar delivery of `body` signed by standardwebhooks with `key` (what it is given for the secret). */
function polarDelivery(key: string, body: string, at: Date): Delivery {
  return {
    body,
    headers: {
      'webhook-id': MSG,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new StandardWebhook(key).sign(MSG, at, body),
    },
  };
}

const utf8Key = (secret: string) => Buffer.from(secret, 'utf8').toString('base64');

describe('polar keys as Polar signs: per the spec for its secrets since 2026-09-08, with the UTF-8 bytes before', () => {
  it('accepts a whsec_ + base64 secret keyed either way (Polar picks by when the secret was made, which the secret does not say)', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const now = new Date();
    const body = '{"type":"order.paid"}';
    // Since 2026-09-08: the spec's key, the base64 after whsec_.
    await verifyAt(polar({ secret }), polarDelivery(secret, body, now), now);
    // Before: the secret's UTF-8 bytes (as @polar-sh/sdk keyed, base64-encoding the whole secret).
    await verifyAt(polar({ secret }), polarDelivery(utf8Key(secret), body, now), now);
    // Another secret's key, either way, is refused.
    const other = `whsec_${randomBytes(32).toString('base64')}`;
    for (const key of [other, utf8Key(other)]) {
      await assert.rejects(
        verifyAt(polar({ secret }), polarDelivery(key, body, now), now),
        /no polar signature|invalid/,
      );
    }
  });

  it('keys an older secret (polar_whs_..., whsec_ + a 43-character token) with its UTF-8 bytes only', async () => {
    const now = new Date();
    const body = '{"type":"order.paid"}';
    for (const secret of [
      `polar_whs_${randomBytes(32).toString('base64url')}`,
      `whsec_${randomBytes(32).toString('base64url')}`,
    ]) {
      await verifyAt(polar({ secret }), polarDelivery(utf8Key(secret), body, now), now);
      // The spec's reading of it (the base64 of its tail, decoded leniently) is no key of Polar's.
      const tail = secret.replace(/^(polar_whs_|whsec_)/, '');
      const lenient = Buffer.from(tail, 'base64').toString('base64');
      await assert.rejects(
        verifyAt(polar({ secret }), polarDelivery(lenient, body, now), now),
        /no polar signature|invalid/,
      );
    }
  });
});
