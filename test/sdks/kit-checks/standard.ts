import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import twilioSdk from 'twilio';
import type { Checks, SdkCheck } from './types.js';

// No check for the token senders (GitLab, Postmark, Telegram, Okta): nothing is signed, and of
// their packages here (@gitbeaker/core, postmark, @grammyjs/types) none verifies a webhook.
const standardVerify: SdkCheck = (d, secret) => new StandardWebhook(secret).verify(d.text, { ...d.headers });
const svixVerify: SdkCheck = (d, secret) => new SvixWebhook(secret).verify(d.text, { ...d.headers });

export const checks: Checks = {
  standardWebhooks: {
    sdk: 'standardwebhooks Webhook.verify',
    verify: standardVerify,
  },
  resend: {
    sdk: 'svix Webhook.verify (Resend verifies with svix)',
    verify: svixVerify,
  },
  clerk: {
    sdk: "svix Webhook.verify (as Clerk's webhook guides verify)",
    verify: svixVerify,
  },
  liveblocks: {
    // @liveblocks/node is not installed here; its WebhookHandler checks the same webhook-* scheme.
    sdk: 'standardwebhooks Webhook.verify (the scheme of @liveblocks/node WebhookHandler)',
    verify: standardVerify,
  },
  polar: {
    // @polar-sh/sdk is not installed here. Polar's secrets made since 2026-09-08 (the kit's
    // testSecret) are signed per the spec: any Standard Webhooks library verifies them as they are.
    sdk: 'standardwebhooks Webhook.verify (Polar signs its secrets since 2026-09-08 per the spec)',
    verify: standardVerify,
  },
  twilio: {
    sdk: 'twilio validateRequest (forms) / validateRequestWithBody (JSON with bodySHA256)',
    verify: (d, secret) => {
      const signature = d.headers['x-twilio-signature'] ?? '';
      return d.url.includes('bodySHA256=')
        ? twilioSdk.validateRequestWithBody(secret, signature, d.url, d.text)
        : twilioSdk.validateRequest(
            secret,
            signature,
            d.url,
            Object.fromEntries(new URLSearchParams(d.text)),
          );
    },
  },
};
