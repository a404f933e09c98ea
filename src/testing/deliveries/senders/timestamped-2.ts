/** Timestamped-HMAC senders (second part): Box, HubSpot, Linear, Mailgun, Mux. */
import { createHash } from 'node:crypto';
import type { SenderName } from '../names.js';
import { hmac, jsonObject, randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow, SignContext, Signed } from '../types.js';
import { pacific, randomAlnum, randomDigits, tV1 } from './timestamped-common.js';

/** Box sends PHP's `json_encode`: non-ASCII as `\uXXXX` (UTF-16 units), `/` as `\/`. */
function phpJson(payload: Record<string, unknown> | readonly unknown[]): string {
  return JSON.stringify(payload)
    .replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(/\//g, '\\/');
}

/**
 * The secondary signature key the kit signs `BOX-SIGNATURE-SECONDARY` with: derived from the
 * primary (the `secret`), so one secret names both; `providerOptions('box', ...)` gives the two.
 */
export const boxSecondaryKey = (primary: string): string =>
  hmac('sha256', primary, ['box secondary signature key'], 'hex').slice(0, 32);

/** Box: base64 HMAC-SHA256 of the body then BOX-DELIVERY-TIMESTAMP, once under each key. */
function boxSign({ secret, at, body }: SignContext): Signed {
  const t = pacific(at);
  return {
    headers: {
      'box-delivery-id': uuid(),
      'box-delivery-timestamp': t,
      'box-signature-algorithm': 'HmacSHA256',
      'box-signature-primary': hmac('sha256', secret, [body, t], 'base64'),
      'box-signature-secondary': hmac('sha256', boxSecondaryKey(secret), [body, t], 'base64'),
      'box-signature-version': '1',
      'user-agent': 'Box-WH-Client/0.1',
    },
  };
}

const boxUser = { type: 'user', id: '2', name: 'Aaron Levie', login: 'ceo@example.com' };
const allFiles = { type: 'folder', id: '0', sequence_id: null, etag: null, name: 'All Files' };

const boxEvent =
  (trigger: string, source: (ctx: SampleContext) => Record<string, unknown>) => (ctx: SampleContext) => ({
    type: 'webhook_event',
    id: ctx.id,
    created_at: pacific(ctx.at),
    trigger,
    webhook: { id: '53', type: 'webhook' },
    created_by: boxUser,
    source: source(ctx),
    additional_info: [],
  });

const boxFile =
  (status: 'active' | 'trashed') =>
  ({ at }: SampleContext): Record<string, unknown> => {
    const sha1 = randomHex(40);
    const when = pacific(at);
    return {
      id: randomDigits(11),
      type: 'file',
      file_version: { type: 'file_version', id: randomDigits(11), sha1 },
      sequence_id: status === 'active' ? '0' : '1',
      etag: status === 'active' ? '0' : '1',
      sha1,
      name: 'Q4 report – café.pdf',
      description: '',
      size: 629644,
      path_collection: { total_count: 1, entries: [allFiles] },
      created_at: when,
      modified_at: when,
      trashed_at: status === 'trashed' ? when : null,
      purged_at: null,
      content_created_at: when,
      content_modified_at: when,
      created_by: boxUser,
      modified_by: boxUser,
      owned_by: boxUser,
      shared_link: null,
      parent: allFiles,
      item_status: status,
    };
  };

// HubSpot decodes these percent-escapes (and only these) in the URI before signing it.
const HUBSPOT_DECODED = ['%3A', '%2F', '%3F', '%40', '%21', '%24', '%27', '%28', '%29', '%2A', '%2C', '%3B'];
const hubspotUri = (url: string): string =>
  url.replace(/%[0-9A-Fa-f]{2}/g, (code) =>
    HUBSPOT_DECODED.includes(code.toUpperCase()) ? decodeURIComponent(code) : code,
  );

/** A HubSpot delivery: a JSON array of events (one here), each with its own numeric eventId. */
const hubspotEvent =
  (subscriptionType: string, fields: Record<string, unknown>) =>
  ({ id, at }: SampleContext): string =>
    JSON.stringify([
      {
        eventId: Number(id),
        subscriptionId: 2473641,
        portalId: 62515,
        appId: 1160452,
        occurredAt: at.getTime(),
        subscriptionType,
        attemptNumber: 0,
        objectId: Number(randomDigits(8)),
        ...fields,
      },
    ]);

const linearOrg = 'e8b4b0a1-3d3a-4b0e-9f1c-7a2b9c1d2e3f';
const linearTeam = { id: '72b2a2dc-6f4f-4423-9d34-24b5bd10634a', key: 'ENG', name: 'Engineering' };

const linearEvent =
  (
    type: string,
    action: string,
    data: (ctx: SampleContext) => Record<string, unknown>,
    extra: Record<string, unknown> = {},
  ) =>
  (ctx: SampleContext) => {
    const d = data(ctx);
    return {
      action,
      actor: { id: uuid(), name: 'Jane Doe', email: 'jane@example.com', type: 'user' },
      createdAt: ctx.iso,
      data: d,
      ...extra,
      url: d.url,
      type,
      organizationId: linearOrg,
      webhookTimestamp: ctx.at.getTime(),
      webhookId: '2b3c4d5e-6f70-4812-9a3b-4c5d6e7f8091',
    };
  };

const linearIssue = ({ iso }: SampleContext) => ({
  id: uuid(),
  createdAt: iso,
  updatedAt: iso,
  number: 42,
  title: 'Fix the login redirect',
  priority: 2,
  priorityLabel: 'High',
  estimate: null,
  sortOrder: -1045.5,
  boardOrder: 0,
  labelIds: [],
  subscriberIds: [],
  teamId: linearTeam.id,
  stateId: 'b4f7a4d7-3c44-4f8e-9d1a-5f6e7d8c9b0a',
  creatorId: uuid(),
  identifier: 'ENG-42',
  url: 'https://linear.app/acme/issue/ENG-42/fix-the-login-redirect',
  state: { id: 'b4f7a4d7-3c44-4f8e-9d1a-5f6e7d8c9b0a', color: '#e2e2e2', name: 'Todo', type: 'unstarted' },
  team: linearTeam,
  labels: [],
});

/** Linear signs the body alone; the event type is in the body and in Linear-Event. */
function linearSign({ secret, body, text, id, type }: SignContext): Signed {
  let event = type;
  try {
    const parsed = JSON.parse(text) as { type?: unknown };
    if (typeof parsed?.type === 'string') event = parsed.type;
  } catch {}
  return {
    headers: {
      'linear-delivery': id,
      'linear-event': event,
      'linear-signature': hmac('sha256', secret, [body], 'hex'),
      'user-agent': 'Linear-Webhook',
    },
  };
}

const mailgunMessage = () => ({
  headers: {
    to: 'Alice <alice@example.com>',
    'message-id': `${randomDigits(14)}.${randomDigits(5)}.${randomDigits(5)}@mg.example.com`,
    from: 'Bob <bob@mg.example.com>',
    subject: 'Your order has shipped',
  },
  attachments: [],
  size: 1116,
});

const mailgunEvent =
  (event: string, fields: () => Record<string, unknown>) =>
  ({ id, at }: SampleContext) => ({
    'event-data': {
      id,
      timestamp: at.getTime() / 1000,
      'log-level': event === 'failed' ? 'error' : 'info',
      event,
      ...fields(),
      message: mailgunMessage(),
      recipient: 'alice@example.com',
      'recipient-domain': 'example.com',
      tags: ['shipping'],
      campaigns: [],
      'user-variables': { order: '1042' },
    },
  });

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * Mailgun signs `timestamp + token` with the webhook signing key and sends the signature object in
 * the body, before `event-data`. A body that already holds `signature.timestamp`, `.token` and
 * `.signature` (empty to be filled) keeps them and its bytes, but for the signature's value;
 * otherwise the signature object is written first, with `at` and a fresh 50-character token.
 */
function mailgunSign({ secret, text, seconds }: SignContext): Signed {
  const parsed = jsonObject(text, 'a mailgun payload is a JSON object (its signature goes inside)');
  const given = isObject(parsed.signature) ? parsed.signature : {};
  const filled = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const timestamp = filled(given.timestamp) ?? seconds;
  const token = filled(given.token) ?? randomHex(50);
  const signature = hmac('sha256', secret, [timestamp, token], 'hex');
  if (filled(given.timestamp) && filled(given.token) && typeof given.signature === 'string') {
    if (given.signature === signature) return { headers: {} };
    // Only the signature's value changes (an empty one is filled): the rest keeps its bytes.
    const old = JSON.stringify(given.signature).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const member = new RegExp(`("signature"\\s*:\\s*)${old}`, 'g');
    if (text.match(member)?.length === 1) {
      return { headers: {}, body: text.replace(member, `$1"${signature}"`) };
    }
  }
  const { signature: _, ...rest } = parsed;
  return { headers: {}, body: JSON.stringify({ signature: { timestamp, token, signature }, ...rest }) };
}

const muxEvent =
  (type: string, objectType: string, data: (ctx: SampleContext) => Record<string, unknown>) =>
  (ctx: SampleContext) => {
    const d = data(ctx);
    return {
      type,
      request_id: null,
      object: { type: objectType, id: d.id },
      id: ctx.id,
      environment: { name: 'Production', id: 'j0863n' },
      data: d,
      created_at: ctx.iso,
      attempts: [],
      accessor_source: null,
      accessor: null,
    };
  };

const muxAsset =
  (status: 'preparing' | 'ready') =>
  ({ seconds }: SampleContext): Record<string, unknown> => ({
    id: randomAlnum(40),
    created_at: seconds,
    status,
    playback_ids: [{ policy: 'public', id: randomAlnum(40) }],
    ...(status === 'ready'
      ? { duration: 23.857167, aspect_ratio: '16:9', max_stored_frame_rate: 29.97 }
      : {}),
    encoding_tier: 'smart',
    video_quality: 'basic',
    max_resolution_tier: '1080p',
    master_access: 'none',
    mp4_support: 'none',
    ingest_type: 'on_demand_direct_upload',
    passthrough: 'order_1042',
    progress:
      status === 'ready' ? { state: 'completed', progress: 100 } : { state: 'ingesting', progress: 0 },
  });

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'box',
    credential: 'secret',
    newSecret: () => randomAlnum(32),
    providerOptions: ({ secret }) => ({ secret: [secret, boxSecondaryKey(secret)] }),
    newId: uuid,
    samples: {
      'FILE.UPLOADED': boxEvent('FILE.UPLOADED', boxFile('active')),
      'FILE.TRASHED': boxEvent('FILE.TRASHED', boxFile('trashed')),
      'FOLDER.CREATED': boxEvent('FOLDER.CREATED', ({ at }) => ({
        id: randomDigits(11),
        type: 'folder',
        sequence_id: '0',
        etag: '0',
        name: 'Contracts 2026',
        created_at: pacific(at),
        modified_at: pacific(at),
        description: '',
        size: 0,
        path_collection: { total_count: 1, entries: [allFiles] },
        created_by: boxUser,
        modified_by: boxUser,
        owned_by: boxUser,
        shared_link: null,
        parent: allFiles,
        item_status: 'active',
      })),
    },
    encode: phpJson,
    sign: boxSign,
  },
  {
    name: 'hubspot',
    credential: 'secret',
    // The app's client secret is a UUID.
    newSecret: uuid,
    providerOptions: ({ secret, url }) => ({ secret, url }),
    newId: () => randomDigits(10),
    samples: {
      'contact.creation': hubspotEvent('contact.creation', { changeFlag: 'NEW', changeSource: 'CRM' }),
      'contact.propertyChange': hubspotEvent('contact.propertyChange', {
        propertyName: 'lifecyclestage',
        propertyValue: 'customer',
        changeSource: 'CRM_UI',
        sourceId: 'userId:1234567',
      }),
      'deal.creation': hubspotEvent('deal.creation', { changeFlag: 'NEW', changeSource: 'CRM_UI' }),
    },
    // v3: base64 HMAC-SHA256 of POST + the URI (listed escapes decoded) + body + timestamp (ms),
    // under the client secret; HubSpot also sends v1 (hex SHA-256 of the secret then the body).
    sign: ({ secret, at, url, body }) => {
      const t = String(at.getTime());
      return {
        headers: {
          'x-hubspot-signature': createHash('sha256').update(secret).update(body).digest('hex'),
          'x-hubspot-signature-version': 'v1',
          'x-hubspot-signature-v3': hmac('sha256', secret, ['POST', hubspotUri(url), body, t], 'base64'),
          'x-hubspot-request-timestamp': t,
          'user-agent': 'HubSpot Connect 2.0 (http://dev.hubspot.com/)',
        },
      };
    },
  },
  {
    name: 'linear',
    credential: 'secret',
    newSecret: () => `lin_wh_${randomAlnum(40)}`,
    // Linear-Delivery: a UUID per delivery, unsigned (the provider keys on the signed body instead).
    newId: uuid,
    samples: {
      Issue: linearEvent('Issue', 'create', linearIssue),
      Comment: linearEvent('Comment', 'create', (ctx) => {
        const issue = linearIssue(ctx);
        const id = uuid();
        return {
          id,
          createdAt: ctx.iso,
          updatedAt: ctx.iso,
          body: 'Reproduced on staging: café → 😀',
          issueId: issue.id,
          userId: uuid(),
          reactionData: [],
          issue: { id: issue.id, title: issue.title, teamId: linearTeam.id, identifier: 'ENG-42' },
          user: { id: uuid(), name: 'Jane Doe' },
          url: `${issue.url}#comment-${id.slice(0, 8)}`,
        };
      }),
      Project: linearEvent(
        'Project',
        'update',
        ({ iso }) => ({
          id: uuid(),
          name: 'Checkout revamp',
          description: 'A faster checkout',
          state: 'started',
          createdAt: iso,
          updatedAt: iso,
          startedAt: iso,
          teamIds: [linearTeam.id],
          url: 'https://linear.app/acme/project/checkout-revamp-5d2f',
        }),
        { updatedFrom: { state: 'planned' } },
      ),
    },
    sign: linearSign,
  },
  {
    name: 'mailgun',
    credential: 'secret',
    newSecret: () => randomHex(32),
    newId: () => randomAlnum(22),
    samples: {
      delivered: mailgunEvent('delivered', () => ({
        'delivery-status': {
          tls: true,
          'mx-host': 'mx.example.com',
          code: 250,
          description: '',
          'attempt-no': 1,
          message: 'OK',
          'certificate-verified': true,
        },
        envelope: { transport: 'smtp', sender: 'bob@mg.example.com', targets: 'alice@example.com' },
        flags: { 'is-routed': false, 'is-authenticated': true, 'is-test-mode': false },
      })),
      failed: mailgunEvent('failed', () => ({
        severity: 'permanent',
        reason: 'suppress-bounce',
        'delivery-status': {
          code: 605,
          message: '',
          description: 'Not delivering to previously bounced address',
          'attempt-no': 1,
        },
        envelope: { transport: 'smtp', sender: 'bob@mg.example.com', targets: 'alice@example.com' },
      })),
      opened: mailgunEvent('opened', () => ({
        ip: '50.56.129.169',
        geolocation: { country: 'US', region: 'CA', city: 'San Francisco' },
        'client-info': {
          'client-os': 'Linux',
          'device-type': 'desktop',
          'client-name': 'Chrome',
          'client-type': 'browser',
          'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36',
        },
      })),
    },
    sign: mailgunSign,
  },
  {
    name: 'mux',
    credential: 'secret',
    newSecret: () => randomAlnum(32),
    newId: uuid,
    samples: {
      'video.asset.ready': muxEvent('video.asset.ready', 'asset', muxAsset('ready')),
      'video.asset.created': muxEvent('video.asset.created', 'asset', muxAsset('preparing')),
      'video.upload.asset_created': muxEvent('video.upload.asset_created', 'upload', () => ({
        id: randomAlnum(40),
        status: 'asset_created',
        asset_id: randomAlnum(40),
        cors_origin: 'https://example.com',
        timeout: 3600,
        new_asset_settings: { playback_policies: ['public'], video_quality: 'basic' },
      })),
      'video.live_stream.active': muxEvent('video.live_stream.active', 'live_stream', ({ seconds }) => ({
        id: randomAlnum(40),
        created_at: seconds,
        status: 'active',
        stream_key: uuid(),
        playback_ids: [{ policy: 'public', id: randomAlnum(40) }],
        latency_mode: 'standard',
        max_continuous_duration: 43200,
        active_asset_id: randomAlnum(40),
        recent_asset_ids: [],
      })),
    },
    sign: tV1('mux-signature'),
  },
];
