import { randomBytes } from 'node:crypto';
import { describe } from 'node:test';
import { postmark } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import { type Delivery, TRICKY_JSON } from './kit.js';
import { tokenProviderCases } from './tokenCases.js';

// Postmark's documented scheme (https://postmarkapp.com/developer/webhooks/webhooks-overview,
// "Protecting your webhook"): basic auth credentials in the webhook URL, sent as
// `Authorization: Basic base64(user:password)` (as the kit's signedDelivery sends it).
const credentials = () => `hooks:${randomBytes(18).toString('base64url')}`;

function deliver(userPassword: string): Delivery {
  const d = signedDelivery('postmark', {
    payload: `{"RecordType": "Bounce", "ID": 4323372036854775807, "MessageID": "883953f4-6105-42a2-a16a-77a8eac79483", "Description": ${TRICKY_JSON}}`,
    secret: userPassword,
    type: 'Bounce',
  });
  return { body: d.text, headers: { ...d.headers } };
}

describe('postmark provider (basic auth, as Postmark sends it)', () => {
  tokenProviderCases({
    name: 'postmark',
    token: credentials,
    make: (secret) => postmark({ secret }),
    deliver,
    header: 'authorization',
    expect: { dedup: 'body', type: 'Bounce' },
    lookalikes: ['no-colon-here'],
    retentionMs: 86_400_000,
  });
});
