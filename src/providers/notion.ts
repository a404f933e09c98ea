import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import { bodyIncludes, type HandshakeSpec } from './families/define.js';
import { type EventMapByField, header, parseJsonObject, type SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/**
 * A Notion webhook event: `id`, `type` (`page.created`...), `entity`, `data`, `attempt_number`. For
 * typed payloads, pass `@notionhq/client`'s (see {@link notion}).
 */
export interface NotionEvent {
  id: string;
  timestamp?: string;
  workspace_id?: string;
  subscription_id?: string;
  integration_id?: string;
  type: string;
  entity?: { id: string; type: string };
  data?: Record<string, unknown>;
  attempt_number?: number;
  [field: string]: unknown;
}

export interface NotionOptions {
  /**
   * The subscription's `verification_token` (it signs every event); an array while rotating.
   * Notion sends it once, unsigned, when the subscription is created: see `onVerificationToken`.
   * @example process.env.NOTION_VERIFICATION_TOKEN!
   */
  secret: SecretInput;
  /**
   * Called with the `verification_token` of Notion's unsigned set-up request (answered 200, never
   * stored or handled), only when it has a token's shape (`secret_` and up to 128 letters and
   * digits); any other value is refused as an unsigned delivery and never passed here. Log it or show it to an operator, who pastes it into Notion's Verify form
   * and into `secret`. Anyone can send such a request: never adopt the value as the secret by code.
   */
  onVerificationToken?: ((token: string) => void | Promise<void>) | undefined;
  /**
   * How long a completed event id is remembered. Notion retries failed deliveries with backoff;
   * its window is not published, so the 3-day default for unknown windows applies.
   * @default '3d'
   */
  retention?: Duration;
}

/**
 * A Notion verification token: `secret_` and letters and digits (43 in Notion's examples; up to 128
 * taken). Nothing else reaches `onVerificationToken`.
 */
const TOKEN = /^secret_[A-Za-z0-9]{16,128}$/;

/** Notion's set-up request: a POST without `X-Notion-Signature` whose body is `{ verification_token }`. */
function verificationHandshake(onToken: NotionOptions['onVerificationToken']): HandshakeSpec<undefined> {
  return async (request) => {
    if (request.method !== 'POST' || header(request.headers, 'x-notion-signature') !== undefined) {
      return undefined;
    }
    if (!bodyIncludes(request.rawBody, 'verification_token')) return undefined;
    let body: Record<string, unknown>;
    try {
      body = parseJsonObject(request.rawBody);
    } catch {
      return undefined;
    }
    const token = body.verification_token;
    // Only a token of Notion's shape is handed on (the docs have users log it): anything else (a
    // newline or ESC to fake log lines, 900 kB of text) is not a set-up request and goes on to be
    // refused as an unsigned delivery (missing_header), the callback never called.
    if (typeof token !== 'string' || !TOKEN.test(token) || Object.keys(body).length !== 1) return undefined;
    await onToken?.(token);
    return { status: 200 };
  };
}

function declaration(options: NotionOptions) {
  return bodyHmac<NotionEvent>({
    name: 'notion',
    retention: '3d',
    secret: {
      lookalikes: [['ntn_', 'an integration token']],
      expected: "the subscription's verification_token (sent once when the subscription was created)",
    },
    signature: { header: 'x-notion-signature', encoding: 'hex', prefix: 'sha256=' },
    event: {
      id: 'id',
      type: 'type',
      typeSigned: true,
      // Counted up by Notion on every retry: left out of the content fingerprint.
      perAttempt: ['attempt_number'],
    },
    handshake: verificationHandshake(options.onVerificationToken),
  });
}

/**
 * Notion: `X-Notion-Signature: sha256=<hex>` over the body, HMAC-SHA256 keyed with the
 * subscription's `verification_token`. Dedup keys on the signed event `id`; the type is `type`; the
 * retry counter `attempt_number` is left out of the content fingerprint. The unsigned set-up request
 * carrying the token is answered 200 as a handshake and handed to `onVerificationToken`.
 *
 * @example
 * createReceiver({
 *   provider: notion({ secret: process.env.NOTION_VERIFICATION_TOKEN!, onVerificationToken: (t) => console.log('Notion token', t) }),
 *   store,
 *   on: { 'page.created': index },
 * });
 *
 * `@notionhq/client` exports each event's payload type (types only): pass the union of those you
 * subscribe to for handlers narrowed by event name.
 *
 * @example
 * import type { CommentCreatedWebhookPayload, PageCreatedWebhookPayload } from '@notionhq/client';
 * createReceiver({
 *   provider: notion<PageCreatedWebhookPayload | CommentCreatedWebhookPayload>({ secret: process.env.NOTION_VERIFICATION_TOKEN! }),
 *   store,
 *   on: { 'page.created': ({ event }) => index(event.entity.id) },
 * });
 */
export function notion<E = NotionEvent>(
  options: NotionOptions,
): AuthenticatingProvider<E, EventMapByField<E, 'type'>> {
  return declaration(options)(options) as AuthenticatingProvider<E, EventMapByField<E, 'type'>>;
}
