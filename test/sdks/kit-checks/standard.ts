import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import type { Checks } from './types.js';

export const checks: Checks = {
  standardWebhooks: {
    sdk: 'standardwebhooks Webhook.verify',
    verify: (d, secret) => new StandardWebhook(secret).verify(d.text, { ...d.headers }),
  },
  resend: {
    sdk: 'svix Webhook.verify (Resend verifies with svix)',
    verify: (d, secret) => new SvixWebhook(secret).verify(d.text, { ...d.headers }),
  },
};
