import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  checkTolerance,
  isForm,
  offeredSignatures,
  parseForm,
  parseJsonObject,
  parseJsonObjectText,
  parseTimestamp,
  refusingLookalikes,
  requireHeader,
  requireHmac,
  requireId,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
  toleranceMs,
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
 * Slack: `X-Slack-Signature: v0=<hex>` over `v0:` + timestamp + `:` + body, HMAC-SHA256 with the
 * signing secret. Events API deliveries key on the signed `event_id` (the same on every retry);
 * slash commands and interactivity requests carry no id, so they key on a digest of the body
 * (a replay inside the tolerance is a duplicate). The type is the inner `event.type` for
 * `event_callback`, else the payload's `type`, and `slash_command` for commands.
 *
 * @example
 * createReceiver({ provider: slack({ secret: process.env.SLACK_SIGNING_SECRET! }), store, on: { app_mention: reply } });
 */
export function slack<E = SlackEvent>(options: SlackOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'slack',
    options.secret,
    refusingLookalikes(
      'slack',
      [
        ['xoxb-', 'a bot token'],
        ['xoxp-', 'a user token'],
        ['xapp-', 'an app-level token'],
      ],
      'the signing secret from Basic Information → App Credentials',
    ),
  );
  const tolerance = toleranceMs(options.tolerance);
  const retention = retentionMs(options.retention, '1d');

  /** The signature checks: headers, tolerance, HMAC over `v0:ts:body`. Shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): void {
    const candidates = offeredSignatures(
      'x-slack-signature',
      [requireHeader(headers, 'x-slack-signature')],
      'hex',
      'v0=',
    );
    const timestamp = requireHeader(headers, 'x-slack-request-timestamp');
    checkTolerance(parseTimestamp('x-slack-request-timestamp', timestamp), receivedAt, tolerance);
    requireHmac('slack', 'sha256', keys, `v0:${timestamp}:`, rawBody, candidates);
  }

  return {
    name: 'slack',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const { headers } = input;
      const body = asBuffer(input.rawBody);

      if (isForm(headers)) {
        const form = parseForm(body);
        const payload = form.get('payload');
        if (payload !== null) {
          const event = parseJsonObjectText(payload, 'the payload form field');
          return { event: event as E, type: stringField(event, 'type'), dedup: 'body' };
        }
        const event = Object.fromEntries(form);
        return { event: event as E, type: 'slash_command', dedup: 'body' };
      }
      const event = parseJsonObject(body);
      const envelope = stringField(event, 'type');
      if (envelope === 'event_callback') {
        const id = requireId('slack', stringField(event, 'event_id'), 'event_id');
        return { event: event as E, type: stringField(event.event, 'type'), id, dedup: 'id' };
      }
      // url_verification, app_rate_limited: no id; the signed body itself is the key.
      return { event: event as E, type: envelope, dedup: 'body' };
    },
  };
}
