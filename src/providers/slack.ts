import type { Duration } from '../core/duration.js';
import { VerificationError } from '../errors.js';
import { bodyIncludes } from './families/define.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import {
  asBuffer,
  isForm,
  parseForm,
  parseJsonObject,
  parseJsonObjectText,
  requireId,
  type SecretInput,
  stringField,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

/**
 * A Slack request: an Events API envelope (`event_callback` with `event_id` and `event`), an
 * interactivity payload (the `payload` form field, parsed) or a slash command (the form fields).
 */
export type SlackEvent = Record<string, unknown>;

export interface SlackOptions {
  /**
   * The app's signing secret (Basic Information → App Credentials); an array while rotating.
   * @example process.env.SLACK_SIGNING_SECRET!
   */
  secret: SecretInput;
  /**
   * How far `X-Slack-Request-Timestamp` may be from `receivedAt`, in both directions.
   * @default '5m'
   * @example '2m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. Slack retries 3 times within about 5 minutes;
   * a day leaves a wide margin.
   * @default '1d'
   * @example '7d'
   */
  retention?: Duration;
}

/**
 * The type always follows the signed bytes: Events API envelopes key on `event_id`; slash commands
 * and interactivity payloads, which carry no id, on a digest of the body.
 */
function describe(input: DeliveryInput): Verified<Record<string, unknown>> {
  const { headers } = input;
  const body = asBuffer(input.rawBody);
  if (isForm(headers)) {
    // Content-Type is not signed: a signed JSON body resent as a form must not be read as one
    // (its text could then name any payload type), so the type always follows the signed bytes.
    if (startsLikeJsonObject(body)) {
      throw new VerificationError(
        'invalid_body',
        'onceonly: the slack body is a JSON object but Content-Type says form; send it as application/json',
      );
    }
    const form = parseForm(body);
    const payload = form.get('payload');
    if (payload !== null) {
      const event = parseJsonObjectText(payload, 'the payload form field');
      return { event, type: stringField(event, 'type'), typeSigned: true, dedup: 'body' };
    }
    const event = Object.fromEntries(form);
    return { event, type: 'slash_command', typeSigned: true, dedup: 'body' };
  }
  const event = parseJsonObject(body);
  const envelope = stringField(event, 'type');
  if (envelope === 'event_callback') {
    const id = requireId('slack', stringField(event, 'event_id'), 'event_id');
    return { event, type: stringField(event.event, 'type'), typeSigned: true, id, dedup: 'id' };
  }
  // url_verification (when verified outside a receiver), app_rate_limited: no id; the signed body
  // itself is the key.
  return { event, type: envelope, typeSigned: true, dedup: 'body' };
}

const declaration = timestampedHmac({
  name: 'slack',
  retention: '1d',
  secret: {
    lookalikes: [
      ['xoxb-', 'a bot token'],
      ['xoxp-', 'a user token'],
      ['xapp-', 'an app-level token'],
    ],
    expected: 'the signing secret from Basic Information → App Credentials',
  },
  signature: { header: 'x-slack-signature', encoding: 'hex', prefix: 'v0=' },
  timestamp: { header: 'x-slack-request-timestamp' },
  signedPrefix: (t) => `v0:${t}:`,
  describe,
  // Events API URL verification: a signed POST `{ type: 'url_verification', challenge }`, answered
  // with the challenge once the signature checks out.
  handshake: (request, { authenticate }) => {
    if (request.method !== 'POST' || !bodyIncludes(request.rawBody, 'url_verification')) return undefined;
    if (isForm(request.headers)) return undefined;
    authenticate(request);
    const event = parseJsonObject(request.rawBody);
    if (stringField(event, 'type') !== 'url_verification') return undefined;
    const challenge = stringField(event, 'challenge');
    if (challenge === undefined) {
      throw new VerificationError('invalid_body', 'onceonly: the slack url_verification has no challenge');
    }
    return { body: { challenge } };
  },
});

/**
 * Slack: `X-Slack-Signature: v0=<hex>` over `v0:` + timestamp + `:` + body, HMAC-SHA256 with the
 * signing secret. Events API deliveries key on the signed `event_id` (the same on every retry);
 * slash commands and interactivity requests carry no id, so they key on a digest of the body
 * (a replay inside the tolerance is a duplicate). The type is the inner `event.type` for
 * `event_callback`, else the payload's `type`, and `slash_command` for commands: always from the
 * signed bytes, since a body that is a JSON object is never read as a form, whatever the unsigned
 * Content-Type says. Events API `url_verification` is answered by the receiver itself (outcome
 * `handshake`, `{ challenge }`) once its signature checks out.
 *
 * @example
 * createReceiver({ provider: slack({ secret: process.env.SLACK_SIGNING_SECRET! }), store, on: { app_mention: reply } });
 */
export function slack<E = SlackEvent>(options: SlackOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}

/** True when the first byte past leading whitespace is `{`: a JSON object, never a Slack form. */
function startsLikeJsonObject(body: Uint8Array): boolean {
  for (const byte of body) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b;
  }
  return false;
}
