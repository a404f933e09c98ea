/** Signs deliveries the way the providers themselves do, for the simulator. */
import { createHmac, randomUUID } from 'node:crypto';

export type SimProvider = 'stripe' | 'standard-webhooks' | 'github';

export const SIM_PROVIDERS: readonly SimProvider[] = ['stripe', 'standard-webhooks', 'github'];

export interface SignedDelivery {
  body: string;
  headers: Record<string, string>;
}

/** The event body a provider would send for event number `n` of run `run`. */
export function eventBody(provider: SimProvider, run: string, n: number): { id: string; body: string } {
  const created = Math.floor(Date.now() / 1000);
  if (provider === 'stripe') {
    const id = `evt_${run}_${n}`;
    const body = JSON.stringify({
      id,
      object: 'event',
      type: 'invoice.paid',
      created,
      data: {
        object: {
          id: `in_${run}_${n}`,
          object: 'invoice',
          amount_paid: 1000 + (n % 97),
          currency: 'eur',
          customer: `cus_${n % 50}`,
        },
      },
    });
    return { id, body };
  }
  const id = `msg_${run}_${n}`;
  const body = JSON.stringify({
    type: 'invoice.paid',
    timestamp: new Date().toISOString(),
    data: { invoice: `inv_${run}_${n}`, amount: 1000 + (n % 97) },
  });
  return { id, body };
}

/** Signs `body` now, as a fresh delivery attempt would be (providers re-sign every retry). */
export function sign(provider: SimProvider, secret: string, id: string, body: string): SignedDelivery {
  const ts = Math.floor(Date.now() / 1000);
  if (provider === 'stripe') {
    const v1 = createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
    return { body, headers: { 'content-type': 'application/json', 'stripe-signature': `t=${ts},v1=${v1}` } };
  }
  if (provider === 'github') {
    const sig = createHmac('sha256', secret).update(body).digest('hex');
    return {
      body,
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'issues',
        'x-github-delivery': randomUUID(),
        'x-hub-signature-256': `sha256=${sig}`,
      },
    };
  }
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(ts),
      'webhook-signature': `v1,${sig}`,
    },
  };
}

/** A secret in the form each provider's dashboard shows. */
export function demoSecret(provider: SimProvider): string {
  if (provider === 'github') return 'onceonly-demo-secret';
  return provider === 'stripe'
    ? 'whsec_onceonlyDemoSecret0123456789'
    : `whsec_${Buffer.from('onceonly demo secret key 32 byte').toString('base64')}`;
}
