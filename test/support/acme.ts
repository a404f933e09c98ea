/**
 * The specs' test provider: `acme`, a timestamped body HMAC (`x-acme-signature: sha256=<hex of
 * HMAC-SHA256 of "<t>.<body>">`, `x-acme-timestamp`) whose event id and type come from the signed
 * body, and a request signed the way it verifies.
 */
import { createHmac } from 'node:crypto';
import { hmac } from '../../src/index.js';

export const acme = (secret: string) =>
  hmac<{ id: string; type: string; n?: number }>({
    name: 'acme',
    secret,
    signatureHeader: 'x-acme-signature',
    signaturePrefix: 'sha256=',
    timestampHeader: 'x-acme-timestamp',
    id: (event) => event.id,
    type: (event) => event.type,
    typeSigned: true,
  });

/** A POST of `body` signed with `secret` now, as acme signs it. */
export function acmeDelivery(secret: string, body: string): Request {
  const timestamp = Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return new Request('http://localhost/webhooks', {
    method: 'POST',
    body,
    headers: {
      'x-acme-signature': `sha256=${sig}`,
      'x-acme-timestamp': String(timestamp),
      'content-type': 'application/json',
    },
  });
}
