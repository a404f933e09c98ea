import { strict as assert } from 'node:assert';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { VerificationError } from '../../src/index.js';
import * as p from '../../src/providers/index.js';
import type { Provider } from '../../src/providers/types.js';

const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .publicKey.export({ type: 'spki', format: 'der' })
  .toString('base64');
const ed = generateKeyPairSync('ed25519')
  .publicKey.export({ type: 'spki', format: 'der' })
  .subarray(-32)
  .toString('hex');
const hex = randomBytes(16).toString('hex');

// Each provider with the headers it reads, so the fuzzer reaches past the missing-header checks.
const cases: [Provider<any, any>, string[]][] = [
  [p.stripe({ secret: `whsec_${hex}` }), ['stripe-signature']],
  [
    p.standardWebhooks({ secret: `whsec_${randomBytes(24).toString('base64')}` }),
    ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
  ],
  [p.github({ secret: hex }), ['x-hub-signature-256', 'x-github-event', 'content-type']],
  [p.shopify({ secret: hex }), ['x-shopify-hmac-sha256']],
  [p.slack({ secret: hex }), ['x-slack-signature', 'x-slack-request-timestamp', 'content-type']],
  [p.paddle({ secret: hex }), ['paddle-signature']],
  [p.linear({ secret: hex }), ['linear-signature']],
  [p.square({ secret: hex }), ['x-square-hmacsha256-signature']],
  [p.lemonSqueezy({ secret: hex }), ['x-signature']],
  [p.intercom({ secret: hex }), ['x-hub-signature']],
  [p.zoom({ secret: hex }), ['x-zm-signature', 'x-zm-request-timestamp']],
  [p.twilio({ secret: hex }), ['x-twilio-signature', 'x-twilio-webhooks-signature-settings', 'content-type']],
  [
    p.sendgrid({ publicKey: ec }),
    ['x-twilio-email-event-webhook-signature', 'x-twilio-email-event-webhook-timestamp'],
  ],
  [p.discord({ publicKey: ed }), ['x-signature-ed25519', 'x-signature-timestamp']],
  [p.mailgun({ secret: hex }), ['content-type']],
  // Group A (issue 15 part B).
  [
    p.clerk({ secret: `whsec_${randomBytes(24).toString('base64')}` }),
    ['svix-id', 'svix-timestamp', 'svix-signature'],
  ],
  [p.polar({ secret: hex }), ['webhook-id', 'webhook-timestamp', 'webhook-signature']],
  [p.gitlab({ secret: hex }), ['x-gitlab-token', 'x-gitlab-event']],
  [p.bitbucket({ secret: hex }), ['x-hub-signature', 'x-event-key']],
  [p.jira({ secret: hex }), ['x-hub-signature']],
  [p.typeform({ secret: hex }), ['typeform-signature']],
  [p.calendly({ secret: hex }), ['calendly-webhook-signature']],
  [p.calCom({ secret: hex }), ['x-cal-signature-256']],
  [p.woocommerce({ secret: hex }), ['x-wc-webhook-signature', 'x-wc-webhook-topic']],
  [p.zendesk({ secret: hex }), ['x-zendesk-webhook-signature', 'x-zendesk-webhook-signature-timestamp']],
  [p.vercel({ secret: hex }), ['x-vercel-signature']],
  [p.netlify({ secret: hex }), ['x-webhook-signature', 'x-netlify-event']],
  [p.sentry({ secret: hex }), ['sentry-hook-signature', 'sentry-hook-resource']],
  [p.postmark({ secret: `u:${hex}` }), ['authorization']],
  [p.mux({ secret: hex }), ['mux-signature']],
  [p.coinbaseCommerce({ secret: hex }), ['x-cc-webhook-signature']],
  [p.razorpay({ secret: hex }), ['x-razorpay-signature']],
  [p.checkoutCom({ secret: hex }), ['cko-signature']],
  [p.box({ secret: hex }), ['box-signature-primary', 'box-signature-secondary', 'box-delivery-timestamp']],
  [p.notion({ secret: hex }), ['x-notion-signature']],
  [p.airtable({ secret: randomBytes(32).toString('base64') }), ['x-airtable-content-mac']],
  [p.segment({ secret: hex }), ['x-signature']],
  [p.persona({ secret: hex }), ['persona-signature']],
  [p.lob({ secret: hex }), ['lob-signature', 'lob-signature-timestamp']],
  [p.adyen({ secret: hex }), ['content-type']],
  [p.hubspot({ secret: hex }), ['x-hubspot-signature-v3', 'x-hubspot-request-timestamp']],
  [p.telegram({ secret: hex }), ['x-telegram-bot-api-secret-token']],
];

// Header values the web Headers class accepts (no control characters), biased towards the shapes
// providers parse.
const headerValue = fc.oneof(
  fc.stringMatching(/^[\x20-\x7e]{0,80}$/),
  fc.constantFrom(
    '2026-11-30T05:00:00Z',
    'e30.e30.',
    't=1,v1=00',
    'v1,AAAA',
    'sha256=zz',
    'v0=',
    'ts=1;h1=ab',
    '1764478800',
    'application/x-www-form-urlencoded',
  ),
);
const body = fc.oneof(
  fc.uint8Array({ maxLength: 300 }),
  fc.json().map((j) => new TextEncoder().encode(j)),
  fc.string().map((s) => new TextEncoder().encode(`payload=${encodeURIComponent(s)}`)),
);

describe('providers on hostile input', () => {
  for (const [provider, names] of cases) {
    it(`${provider.name}: any body and header values are rejected with a VerificationError, never accepted or another error`, async () => {
      await fc.assert(
        fc.asyncProperty(
          body,
          fc.array(headerValue, { minLength: names.length, maxLength: names.length }),
          async (raw, values) => {
            const headers = new Headers();
            names.forEach((name, i) => {
              const v = values[i];
              if (v) headers.set(name, v);
            });
            // Nothing here knows the secret: an accepted delivery would be a forgery.
            await assert.rejects(
              Promise.resolve().then(() =>
                provider.verify({
                  rawBody: raw,
                  headers,
                  url: 'https://example.com/hook?x=1',
                  receivedAt: new Date(),
                }),
              ),
              (error: unknown) => {
                assert.ok(error instanceof VerificationError, `unexpected ${String(error)}`);
                return true;
              },
            );
          },
        ),
        { numRuns: 300 },
      );
    });
  }
});
