/**
 * Timestamped-HMAC senders (third part): those that verify the endpoint first, Slack
 * (`url_verification`), Twitch (`webhook_callback_verification`) and Zoom
 * (`endpoint.url_validation`); and Zendesk.
 */
import type { SenderName } from '../names.js';
import { hmac, randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow } from '../types.js';
import { isoSeconds, randomAlnum, randomDigits, randomFrom, v0 } from './timestamped-common.js';

const SLACK_TOKEN = 'Jhj5dZrVaK7ZwHHjRyZWjbDl';
const slackTeam = { id: 'T0123ABCD', domain: 'acme' };
const slackApp = 'A0123EFGH';
const upperAlnum = (length: number) => randomFrom('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', length);

/**
 * Slack's headers: `v0=` HMAC of `v0:<seconds>:body`; the content type follows the body: a form
 * (`name=value&...`: slash commands, interactivity) or JSON (Events API, anything else).
 */
function slackHeaders(secret: string, seconds: string, body: string | Uint8Array): Record<string, string> {
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  const form = /^[\w.%-]+=/.test(text);
  return {
    'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json',
    'x-slack-request-timestamp': seconds,
    'x-slack-signature': v0(secret, seconds, body),
    'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
  };
}

/** An Events API delivery: the `event_callback` envelope around `event`, keyed on `event_id`. */
const slackEvent =
  (event: (ctx: SampleContext, ts: string) => Record<string, unknown>) => (ctx: SampleContext) => {
    const ts = `${ctx.seconds}.${randomDigits(6)}`;
    return {
      token: SLACK_TOKEN,
      team_id: slackTeam.id,
      api_app_id: slackApp,
      event: event(ctx, ts),
      type: 'event_callback',
      event_id: ctx.id,
      event_time: ctx.seconds,
      authorizations: [
        {
          enterprise_id: null,
          team_id: slackTeam.id,
          user_id: 'U0LAN0Z89',
          is_bot: true,
          is_enterprise_install: false,
        },
      ],
      is_ext_shared_channel: false,
      event_context: `4-${Buffer.from(randomHex(48), 'hex').toString('base64url')}`,
    };
  };

const triggerId = (seconds: number) => `${seconds}${randomDigits(2)}.${randomDigits(9)}.${randomHex(32)}`;

const twitchBroadcaster = {
  broadcaster_user_id: '1337',
  broadcaster_user_login: 'cool_user',
  broadcaster_user_name: 'Cool_User',
};

/** Twitch writes RFC 3339 times with nanoseconds. */
const nanos = (at: Date): string => `${at.toISOString().slice(0, -1)}${randomFrom('0123456789', 6)}Z`;

const twitchSubscription = (
  type: string,
  version: string,
  condition: Record<string, string>,
  at: Date,
  status = 'enabled',
) => ({
  id: uuid(),
  status,
  type,
  version,
  cost: 0,
  condition,
  transport: { method: 'webhook', callback: 'https://example.com/webhooks/twitch' },
  created_at: nanos(at),
});

const followCondition = { broadcaster_user_id: '1337', moderator_user_id: '1337' };

/**
 * Twitch's headers: `sha256=` hex HMAC-SHA256 of message id + timestamp + body; the message type
 * and subscription type and version follow the body (notification, revocation or verification).
 */
function twitchHeaders(
  secret: string,
  at: Date,
  id: string,
  body: string | Uint8Array,
  fallbackType: string,
): Record<string, string> {
  const text = typeof body === 'string' ? body : new TextDecoder().decode(body);
  let parsed: { event?: unknown; challenge?: unknown; subscription?: { type?: unknown; version?: unknown } } =
    {};
  try {
    parsed = JSON.parse(text) ?? {};
  } catch {}
  const kind =
    parsed.event !== undefined
      ? 'notification'
      : parsed.challenge !== undefined
        ? 'webhook_callback_verification'
        : parsed.subscription !== undefined
          ? 'revocation'
          : 'notification';
  const subscription = parsed.subscription ?? {};
  const ts = nanos(at);
  return {
    'twitch-eventsub-message-id': id,
    'twitch-eventsub-message-retry': '0',
    'twitch-eventsub-message-type': kind,
    'twitch-eventsub-message-signature': `sha256=${hmac('sha256', secret, [id, ts, body], 'hex')}`,
    'twitch-eventsub-message-timestamp': ts,
    'twitch-eventsub-subscription-type':
      typeof subscription.type === 'string' ? subscription.type : fallbackType,
    'twitch-eventsub-subscription-version':
      typeof subscription.version === 'string' ? subscription.version : '1',
  };
}

const ZOOM_ACCOUNT = 'AAAAAABBBB';
const zoomHeaders = (secret: string, seconds: string, body: string | Uint8Array) => ({
  'x-zm-request-timestamp': seconds,
  'x-zm-signature': v0(secret, seconds, body),
  'user-agent': 'Zoom Marketplace/1.0a',
});

const zoomEvent =
  (event: string, object: (ctx: SampleContext) => Record<string, unknown>) => (ctx: SampleContext) => ({
    event,
    payload: {
      account_id: ZOOM_ACCOUNT,
      object: {
        id: Number(randomDigits(11)),
        uuid: ctx.id,
        host_id: randomAlnum(22),
        topic: 'Weekly sync',
        type: 2,
        start_time: isoSeconds(new Date(ctx.at.getTime() - 30 * 60_000)),
        timezone: 'America/Los_Angeles',
        duration: 60,
        ...object(ctx),
      },
    },
    event_ts: ctx.at.getTime(),
  });

const zendeskEvent =
  (
    type: string,
    subject: (ids: { ticket: string; user: string }) => string,
    detail: (ctx: SampleContext, ids: { ticket: string; user: string }) => Record<string, unknown>,
    event: () => Record<string, unknown> = () => ({}),
  ) =>
  (ctx: SampleContext) => {
    const ids = { ticket: randomDigits(4), user: randomDigits(14) };
    return {
      account_id: 12514403,
      detail: detail(ctx, ids),
      event: event(),
      id: ctx.id,
      subject: subject(ids),
      time: ctx.iso,
      type: `zen:event-type:${type}`,
      zendesk_event_version: '2022-11-06',
    };
  };

const zendeskTicket = ({ iso }: SampleContext, { ticket, user }: { ticket: string; user: string }) => ({
  actor_id: user,
  assignee_id: null,
  brand_id: '10001',
  created_at: isoSeconds(new Date(iso)),
  custom_status: '1',
  description: 'My printer is on fire!',
  external_id: null,
  form_id: '360000123456',
  group_id: '360000654321',
  id: ticket,
  is_public: true,
  organization_id: null,
  priority: 'NORMAL',
  requester_id: user,
  status: 'NEW',
  subject: 'Help, my printer is on fire!',
  submitter_id: user,
  tags: [],
  type: 'INCIDENT',
  updated_at: isoSeconds(new Date(iso)),
  via: { channel: 'web_form' },
});

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'slack',
    credential: 'secret',
    // The signing secret: 32 hex characters.
    newSecret: () => randomHex(32),
    newId: () => `Ev${upperAlnum(9)}`,
    samples: {
      app_mention: slackEvent((_ctx, ts) => ({
        type: 'app_mention',
        user: 'U061F7AUR',
        text: '<@U0LAN0Z89> is it everything a river should be?',
        ts,
        channel: 'C0LAN2Q65',
        event_ts: ts,
        client_msg_id: uuid(),
        team: slackTeam.id,
      })),
      message: slackEvent((_ctx, ts) => ({
        type: 'message',
        channel: 'C2147483705',
        user: 'U2147483697',
        text: 'Hello world',
        ts,
        event_ts: ts,
        channel_type: 'channel',
        client_msg_id: uuid(),
        team: slackTeam.id,
      })),
      // Slash commands and interactivity come as forms (no event id: the provider keys on the body).
      slash_command: ({ seconds }) =>
        new URLSearchParams({
          token: SLACK_TOKEN,
          team_id: slackTeam.id,
          team_domain: slackTeam.domain,
          channel_id: 'C2147483705',
          channel_name: 'test',
          user_id: 'U2147483697',
          user_name: 'steve',
          command: '/weather',
          text: '94070',
          api_app_id: slackApp,
          is_enterprise_install: 'false',
          response_url: `https://hooks.slack.com/commands/${slackTeam.id}/${randomDigits(13)}/${randomAlnum(24)}`,
          trigger_id: triggerId(seconds),
        }).toString(),
      block_actions: ({ seconds }) =>
        new URLSearchParams({
          payload: JSON.stringify({
            type: 'block_actions',
            user: { id: 'U2147483697', username: 'steve', name: 'steve', team_id: slackTeam.id },
            api_app_id: slackApp,
            token: SLACK_TOKEN,
            container: {
              type: 'message',
              message_ts: `${seconds}.000200`,
              channel_id: 'C2147483705',
              is_ephemeral: false,
            },
            trigger_id: triggerId(seconds),
            team: slackTeam,
            enterprise: null,
            is_enterprise_install: false,
            channel: { id: 'C2147483705', name: 'test' },
            response_url: `https://hooks.slack.com/actions/${slackTeam.id}/${randomDigits(13)}/${randomAlnum(24)}`,
            actions: [
              {
                action_id: 'approve',
                block_id: 'request_1',
                text: { type: 'plain_text', text: 'Approve', emoji: true },
                value: 'approve_1',
                type: 'button',
                action_ts: `${seconds}.${randomDigits(6)}`,
              },
            ],
          }),
        }).toString(),
    },
    sign: ({ secret, seconds, body }) => ({ headers: slackHeaders(secret, seconds, body) }),
    handshakeNeedsSecret: true,
    // Events API URL verification: a signed POST answered with { challenge }.
    handshake: ({ secret, seconds, challenge }) => {
      const body = JSON.stringify({ token: SLACK_TOKEN, challenge, type: 'url_verification' });
      return { method: 'POST', headers: slackHeaders(secret, seconds, body), body, challenge };
    },
  },
  {
    name: 'twitch',
    credential: 'secret',
    // transport.secret: chosen by the app when subscribing (10 to 100 ASCII characters).
    newSecret: () => randomHex(32),
    // Twitch-Eventsub-Message-Id: a UUID, signed, the same on a resend.
    newId: uuid,
    samples: {
      'channel.follow': ({ at }) => ({
        subscription: twitchSubscription('channel.follow', '2', followCondition, at),
        event: {
          user_id: '1234',
          user_login: 'cool_follower',
          user_name: 'Cool_Follower',
          ...twitchBroadcaster,
          followed_at: nanos(at),
        },
      }),
      'stream.online': ({ at }) => ({
        subscription: twitchSubscription('stream.online', '1', { broadcaster_user_id: '1337' }, at),
        event: { id: randomDigits(10), ...twitchBroadcaster, type: 'live', started_at: isoSeconds(at) },
      }),
      'channel.subscribe': ({ at }) => ({
        subscription: twitchSubscription('channel.subscribe', '1', { broadcaster_user_id: '1337' }, at),
        event: {
          user_id: '1234',
          user_login: 'cool_subscriber',
          user_name: 'Cool_Subscriber',
          ...twitchBroadcaster,
          tier: '1000',
          is_gift: false,
        },
      }),
      // The subscription alone, its status saying why (Message-Type: revocation).
      revocation: ({ at }) => ({
        subscription: twitchSubscription('channel.follow', '2', followCondition, at, 'authorization_revoked'),
      }),
    },
    sign: ({ secret, at, id, body, type }) => ({ headers: twitchHeaders(secret, at, id, body, type) }),
    handshakeNeedsSecret: true,
    // The subscription check: a signed POST holding `challenge`, answered with it as text.
    handshake: ({ secret, at, challenge }) => {
      const body = JSON.stringify({
        challenge,
        subscription: twitchSubscription(
          'channel.follow',
          '2',
          followCondition,
          at,
          'webhook_callback_verification_pending',
        ),
      });
      return {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...twitchHeaders(secret, at, uuid(), body, '') },
        body,
        challenge,
      };
    },
  },
  {
    name: 'zoom',
    credential: 'secret',
    // The app's Secret Token: 22 base64url characters.
    newSecret: () => Buffer.from(randomHex(32), 'hex').toString('base64url'),
    // Zoom sends no event id: the kit's id is the meeting UUID (base64), in payload.object.uuid.
    newId: () => Buffer.from(randomHex(32), 'hex').toString('base64'),
    contentType: 'application/json; charset=utf-8',
    samples: {
      'meeting.started': zoomEvent('meeting.started', () => ({})),
      'meeting.ended': zoomEvent('meeting.ended', ({ at }) => ({ end_time: isoSeconds(at) })),
      'meeting.participant_joined': zoomEvent('meeting.participant_joined', ({ at }) => ({
        participant: {
          user_id: randomDigits(8),
          user_name: 'Jill Chill',
          id: randomAlnum(22),
          participant_uuid: uuid(),
          join_time: isoSeconds(at),
          email: 'jchill@example.com',
        },
      })),
    },
    sign: ({ secret, seconds, body }) => ({ headers: zoomHeaders(secret, seconds, body) }),
    handshakeNeedsSecret: true,
    // Endpoint URL validation: a signed POST answered with the plain token and its HMAC.
    handshake: ({ secret, seconds, at, challenge }) => {
      const body = JSON.stringify({
        payload: { plainToken: challenge },
        event_ts: at.getTime(),
        event: 'endpoint.url_validation',
      });
      return {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', ...zoomHeaders(secret, seconds, body) },
        body,
        challenge,
      };
    },
  },
  {
    name: 'zendesk',
    credential: 'secret',
    newSecret: () => Buffer.from(randomHex(64), 'hex').toString('base64'),
    newId: uuid,
    samples: {
      'zen:event-type:ticket.created': zendeskEvent(
        'ticket.created',
        ({ ticket }) => `zen:ticket:${ticket}`,
        zendeskTicket,
      ),
      'zen:event-type:ticket.comment_added': zendeskEvent(
        'ticket.comment_added',
        ({ ticket }) => `zen:ticket:${ticket}`,
        zendeskTicket,
        () => ({
          comment: {
            author: { id: randomDigits(14), is_staff: false, name: 'Jane Doe' },
            body: 'It is still on fire.',
            id: randomDigits(14),
            is_public: true,
          },
        }),
      ),
      'zen:event-type:user.created': zendeskEvent(
        'user.created',
        ({ user }) => `zen:user:${user}`,
        ({ iso }, { user }) => ({
          created_at: isoSeconds(new Date(iso)),
          email: 'jane@example.com',
          external_id: null,
          default_group_id: null,
          id: user,
          organization_id: null,
          role: 'end-user',
          updated_at: isoSeconds(new Date(iso)),
        }),
      ),
    },
    // X-Zendesk-Webhook-Signature: base64 HMAC-SHA256 of the RFC 3339 timestamp, then the body.
    sign: ({ secret, at, body }) => {
      const t = isoSeconds(at);
      return {
        headers: {
          'x-zendesk-webhook-id': `01${randomAlnum(24).toUpperCase()}`,
          'x-zendesk-webhook-invocation-id': randomDigits(10),
          'x-zendesk-webhook-signature-timestamp': t,
          'x-zendesk-webhook-signature': hmac('sha256', secret, [t, body], 'base64'),
          'user-agent': 'Zendesk Webhook',
        },
      };
    },
  },
];
