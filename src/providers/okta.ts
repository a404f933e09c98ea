import type { Duration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { plainChallenge } from './families/challenge.js';
import { token } from './families/token.js';
import { header, parseJsonObject, type SecretInput, stringField } from './shared.js';
import type { AuthenticatingProvider, BatchItem, DeliveryInput, Verified } from './types.js';

/** One Okta System Log event of an event hook delivery (`data.events[]`). */
export interface OktaEvent {
  uuid: string;
  eventType: string;
  published: string;
  [field: string]: unknown;
}

export interface OktaOptions {
  /**
   * The event hook's authentication secret exactly as typed into its "Authentication secret"
   * field (Okta sends it as the whole header value); an array while rotating.
   * @example process.env.OKTA_EVENT_HOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * The event hook's "Authentication field": the header Okta puts the secret in.
   * @default 'authorization'
   * @example 'x-okta-hook-auth'
   */
  header?: string;
  /**
   * How long a completed event is remembered. Okta retries a delivery at most once (after a
   * 3-second timeout); a day is a wide margin.
   * @default '1d'
   * @example '3d'
   */
  retention?: Duration;
}

const CHALLENGE = 'x-okta-verification-challenge';

/**
 * The events of `data.events`, each keyed on its own `uuid` and routed by its own `eventType`
 * (`user.session.start`); a delivery is a batch of up to 50, settled per event.
 */
function describe(input: DeliveryInput): Verified<OktaEvent> {
  const body = parseJsonObject(input.rawBody);
  const events = (body.data as { events?: unknown } | undefined)?.events;
  if (!Array.isArray(events) || events.length === 0) {
    throw new VerificationError(
      'invalid_body',
      'onceonly: the okta event hook body must hold data.events, a non-empty array',
    );
  }
  const batch: BatchItem<OktaEvent>[] = [];
  for (const e of events) {
    const id = stringField(e, 'uuid');
    if (id === undefined) {
      throw new VerificationError(
        'missing_event_id',
        'onceonly: an okta event has no uuid; Okta always sends one, so this delivery is refused',
      );
    }
    batch.push({ id, type: stringField(e, 'eventType'), event: e as OktaEvent });
  }
  const first = batch[0]!;
  // The secret vouches for the sender, not for the bytes: the type is as trustworthy as the body.
  return { event: first.event, id: first.id, type: first.type, typeSigned: true, dedup: 'id', batch };
}

const declare = (name: string) =>
  token<OktaEvent>({
    name: 'okta',
    retention: '1d',
    secret: {
      lookalikes: [['SSWS ', 'an Okta API token (SSWS)']],
      expected: "the event hook's authentication secret",
      // Okta API tokens are 42 characters starting with 00.
      refuse: (s) =>
        /^00[A-Za-z0-9_-]{40}$/.test(s)
          ? "the okta secret looks like an API token (00...); use the event hook's authentication secret"
          : undefined,
    },
    token: { header: name },
    describe,
    // The one-time verification: a GET with X-Okta-Verification-Challenge, carrying the hook's
    // authentication header like every delivery; answered `{ verification }` once that checks out.
    handshake: (request, { authenticate }) => {
      if (request.method !== 'GET') return undefined;
      const challenge = header(request.headers, CHALLENGE);
      if (challenge === undefined) return undefined;
      authenticate(request);
      return { body: { verification: plainChallenge(challenge, `${CHALLENGE} header`) } };
    },
  });

const declarations = new Map<string, ReturnType<typeof declare>>([
  ['authorization', declare('authorization')],
]);

/**
 * Okta event hooks: the hook's authentication secret, sent as it is in the header you named
 * (`Authorization` by default), compared in constant time. It vouches for the sender, not for the
 * body (there is no signature: keep TLS to your endpoint and headers out of logs). A delivery
 * batches System Log events in `data.events`; each is keyed on its `uuid` and routed by its
 * `eventType`, so a re-sent batch runs only the events that did not complete. The one-time
 * verification GET (`X-Okta-Verification-Challenge`) is answered by the receiver itself once the
 * secret checks out: route GET to the webhook too (see docs/adapters.md).
 *
 * @example
 * createReceiver({
 *   provider: okta({ secret: process.env.OKTA_EVENT_HOOK_SECRET! }),
 *   store,
 *   on: { 'user.lifecycle.deactivate': ({ event }) => revokeSessions(event.target) },
 * });
 */
export function okta<E extends OktaEvent = OktaEvent>(options: OktaOptions): AuthenticatingProvider<E> {
  const name = options.header ?? 'authorization';
  if (typeof name !== 'string' || !/^[A-Za-z0-9-]{1,64}$/.test(name)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: okta header must be the event hook's Authentication field, a header name, got ${JSON.stringify(name)}`,
    );
  }
  const key = name.toLowerCase();
  let declaration = declarations.get(key);
  if (declaration === undefined) {
    declaration = declare(key);
    declarations.set(key, declaration);
  }
  return declaration(options) as unknown as AuthenticatingProvider<E>;
}
