/** Signs deliveries the way the providers themselves do, for the simulator. */
import { createHmac, randomUUID } from 'node:crypto';

export type SimProvider = 'stripe' | 'standard-webhooks' | 'github';

export const SIM_PROVIDERS: readonly SimProvider[] = ['stripe', 'standard-webhooks', 'github'];

export interface SignedDelivery {
  body: string;
  headers: Record<string, string>;
  /** Where it goes, when signing changed the URL (Twilio's bodySHA256): else the run's URL. */
  url?: string | undefined;
}

/** The event type a provider's simulated events carry when none is asked for. */
export function defaultType(provider: SimProvider): string {
  return provider === 'github' ? 'issues' : 'invoice.paid';
}

/** The event body a provider would send for event number `n` of run `run`, of event type `type`. */
export function eventBody(
  provider: SimProvider,
  run: string,
  n: number,
  type = defaultType(provider),
): { id: string; body: string } {
  const created = Math.floor(Date.now() / 1000);
  if (provider === 'stripe') {
    const id = `evt_${run}_${n}`;
    const body = JSON.stringify({
      id,
      object: 'event',
      type,
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
  if (provider === 'github') {
    // GitHub signs only the body, and its delivery id header is unsigned: the event's identity is
    // in the body (here the issue's node id), as it is in a real payload.
    const id = `gh_${run}_${n}`;
    const body = JSON.stringify({
      action: 'opened',
      issue: { node_id: id, number: n, title: `Issue ${n}`, state: 'open' },
      repository: { full_name: 'onceonly/demo' },
      sender: { login: 'octocat' },
    });
    return { id, body };
  }
  const id = `msg_${run}_${n}`;
  const body = JSON.stringify({
    type,
    timestamp: new Date().toISOString(),
    data: { invoice: `inv_${run}_${n}`, amount: 1000 + (n % 97) },
  });
  return { id, body };
}

/** The event id `eventBody` put in the event, read back from the parsed event a handler gets. */
export function eventIdOf(provider: SimProvider, event: unknown, id: string | undefined): string | undefined {
  if (provider !== 'github') return id;
  return (event as { issue?: { node_id?: string } } | null)?.issue?.node_id;
}

/** Signs `body` now, as a fresh delivery attempt would be (providers re-sign every retry). */
export function sign(
  provider: SimProvider,
  secret: string,
  id: string,
  body: string,
  type = defaultType(provider),
): SignedDelivery {
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
        'x-github-event': type,
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
