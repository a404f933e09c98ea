/** Standard Webhooks senders (Svix and those on it), token senders and form-HMAC senders. */
import type { SenderName } from '../names.js';
import { randomHex, standardWebhooks } from '../sign.js';
import type { SenderRow } from '../types.js';

/** A Svix message id: `msg_` and 27 base62 characters. */
const svixId = () => `msg_${randomHex(27)}`;

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'standardWebhooks',
    credential: 'secret',
    newSecret: () => `whsec_${Buffer.from(randomHex(48), 'hex').toString('base64')}`,
    newId: svixId,
    samples: {
      'invoice.paid': ({ iso, id }) => ({
        type: 'invoice.paid',
        timestamp: iso,
        data: { id: `inv_${id.slice(4, 16)}`, amount: 1999, currency: 'eur' },
      }),
    },
    sign: standardWebhooks('webhook'),
  },
  {
    name: 'resend',
    credential: 'secret',
    newSecret: () => `whsec_${Buffer.from(randomHex(48), 'hex').toString('base64')}`,
    newId: svixId,
    samples: {
      'email.sent': ({ iso }) => ({
        type: 'email.sent',
        created_at: iso,
        data: {
          created_at: iso,
          email_id: crypto.randomUUID(),
          from: 'Acme <onboarding@resend.dev>',
          to: ['delivered@resend.dev'],
          subject: 'Sending this example',
        },
      }),
      'email.delivered': ({ iso }) => ({
        type: 'email.delivered',
        created_at: iso,
        data: {
          created_at: iso,
          email_id: crypto.randomUUID(),
          from: 'Acme <onboarding@resend.dev>',
          to: ['delivered@resend.dev'],
          subject: 'Sending this example',
        },
      }),
      'email.bounced': ({ iso }) => ({
        type: 'email.bounced',
        created_at: iso,
        data: {
          created_at: iso,
          email_id: crypto.randomUUID(),
          from: 'Acme <onboarding@resend.dev>',
          to: ['bounced@resend.dev'],
          subject: 'Sending this example',
          bounce: {
            message: 'The recipient mailbox does not exist.',
            subType: 'Suppressed',
            type: 'Permanent',
          },
        },
      }),
    },
    sign: standardWebhooks('svix'),
  },
];
