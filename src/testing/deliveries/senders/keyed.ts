/**
 * Senders that sign with their own private key: Discord (Ed25519 over timestamp + body) and
 * SendGrid (ECDSA P-256 over timestamp + body), whose public key the receiver is configured with;
 * Plaid (an ES256 JWT whose key the receiver fetches from Plaid's API by key id); and, in
 * keyed-2.ts, AWS SNS and PayPal (RSA, their certificate fetched and checked against a chain).
 * Their credential is `testKeys(name)`: a key pair made in the process, and `trust`, what the
 * provider is built with in tests to accept the kit's deliveries.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { markTestKeys } from '../../../providers/families/testKeys.js';
import type { SenderName } from '../names.js';
import { randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow, SignContext, TestKeys } from '../types.js';
import { rows as certified } from './keyed-2.js';
import { makeTestKeys, signerOf, testFetch } from './keyed-3.js';

// ---- Discord -------------------------------------------------------------------------------------

const DISCORD_EPOCH = 1_420_070_400_000n;
let increment = 0n;

/** A Discord snowflake: milliseconds since 2015 in the top bits, then worker, process, increment. */
function snowflake(at = Date.now()): string {
  increment = (increment + 1n) & 0xfffn;
  return String(
    ((BigInt(at) - DISCORD_EPOCH) << 22n) | (BigInt(randomBytes(1)[0]! & 0x1f) << 17n) | increment,
  );
}

const APPLICATION_ID = '1183412395632463954';
const GUILD_ID = '1183413284971970611';
const CHANNEL_ID = '1183413285424974011';
const discordUser = {
  id: '453998951291748352',
  username: 'nelly',
  avatar: 'a_d5efa99b3eeaa7dd43acca82f5692432',
  discriminator: '0',
  global_name: 'Nelly',
  public_flags: 0,
};
const member = {
  avatar: null,
  deaf: false,
  flags: 0,
  joined_at: '2023-12-09T18:40:02.164000+00:00',
  mute: false,
  nick: null,
  pending: false,
  permissions: '2251799813685247',
  premium_since: null,
  roles: [],
  user: discordUser,
};

/** An interaction as Discord posts it: its id (a snowflake) and a token to answer with. */
const interaction =
  (type: number, rest: (ctx: SampleContext) => Record<string, unknown>) => (ctx: SampleContext) => ({
    app_permissions: '562949953601536',
    application_id: APPLICATION_ID,
    ...rest(ctx),
    entitlements: [],
    id: ctx.id,
    token: Buffer.from(`interaction:${ctx.id}:${randomHex(64)}`).toString('base64url'),
    type,
    version: 1,
  });

const inGuild = {
  authorizing_integration_owners: { '0': GUILD_ID },
  channel: { id: CHANNEL_ID, guild_id: GUILD_ID, name: 'orders', type: 0, nsfw: false, flags: 0 },
  channel_id: CHANNEL_ID,
  context: 0,
  guild: { features: [], id: GUILD_ID, locale: 'en-US' },
  guild_id: GUILD_ID,
  guild_locale: 'en-US',
  locale: 'en-US',
  member,
};

interface EdSigner {
  readonly privateKey: KeyObject;
}

/** `X-Signature-Ed25519`: hex Ed25519 over `X-Signature-Timestamp` + body. */
function discordSign(ctx: SignContext) {
  const { privateKey } = signerOf<EdSigner>(ctx.keys, 'discord');
  return {
    headers: {
      'x-signature-ed25519': sign(
        null,
        Buffer.concat([Buffer.from(ctx.seconds), ctx.body]),
        privateKey,
      ).toString('hex'),
      'x-signature-timestamp': ctx.seconds,
      'user-agent': 'Discord-Interactions/1.0 (+https://discord.com)',
    },
  };
}

/** The application's public key as the Developer Portal shows it: the raw 32 bytes in hex. */
function discordTestKeys(): TestKeys {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const hex = publicKey.export({ type: 'spki', format: 'der' }).subarray(-32).toString('hex');
  return makeTestKeys('discord', { publicKey: hex }, { privateKey } satisfies EdSigner);
}

// ---- SendGrid ------------------------------------------------------------------------------------

/** `X-Twilio-Email-Event-Webhook-Signature`: base64 DER ECDSA P-256 SHA-256 over timestamp + body. */
function sendgridSign(ctx: SignContext) {
  const { privateKey } = signerOf<EdSigner>(ctx.keys, 'sendgrid');
  const data = Buffer.concat([Buffer.from(ctx.seconds), ctx.body]);
  return {
    headers: {
      'x-twilio-email-event-webhook-signature': sign('sha256', data, {
        key: privateKey,
        dsaEncoding: 'der',
      }).toString('base64'),
      'x-twilio-email-event-webhook-timestamp': ctx.seconds,
      'user-agent': 'SendGrid Event API',
    },
  };
}

/** The verification key as Mail Settings shows it: base64 of its DER; its PEM form is marked too. */
function sendgridTestKeys(): TestKeys {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const base64 = publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  markTestKeys(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  return makeTestKeys('sendgrid', { publicKey: base64 }, { privateKey } satisfies EdSigner);
}

/**
 * SendGrid posts a JSON array of events, compact, ended by CRLF; each event has its own
 * `sg_event_id` and unix `timestamp`.
 */
const sendgridBatch = (events: readonly unknown[]) => `${JSON.stringify(events)}\r\n`;

const sendgridEvent =
  (event: string, rest: Record<string, unknown> = {}) =>
  (ctx: SampleContext) => {
    const message = randomBytes(16).toString('base64url');
    return sendgridBatch([
      {
        email: 'customer@example.com',
        event,
        ...rest,
        category: ['orders'],
        sg_event_id: ctx.id,
        sg_message_id: `${message}.recvd-${randomHex(10)}-1-${randomHex(8).toUpperCase()}-2.0`,
        'smtp-id': `<${message}@geopod-ismtpd-5>`,
        timestamp: ctx.seconds,
      },
    ]);
  };

// ---- Plaid ---------------------------------------------------------------------------------------

interface PlaidSigner {
  readonly privateKey: KeyObject;
  readonly kid: string;
}

/** Plaid's current key id for this process: every test key set is Plaid's key under this id. */
let plaidKid: string | undefined;

/** `Plaid-Verification`: an ES256 JWT `{ alg, kid, typ }.{ iat, request_body_sha256 }`. */
function plaidSign(ctx: SignContext) {
  const { privateKey, kid } = signerOf<PlaidSigner>(ctx.keys, 'plaid');
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const head = part({ alg: 'ES256', kid, typ: 'JWT' });
  const claims = part({
    iat: Number(ctx.seconds),
    request_body_sha256: createHash('sha256').update(ctx.body).digest('hex'),
  });
  const signature = sign('sha256', Buffer.from(`${head}.${claims}`), {
    key: privateKey,
    dsaEncoding: 'ieee-p1363',
  });
  return { headers: { 'plaid-verification': `${head}.${claims}.${signature.toString('base64url')}` } };
}

/**
 * Answers Plaid's `POST /webhook_verification_key/get` (production and sandbox) with the test key
 * for the current key id, given a client id and secret; Plaid's 400 otherwise.
 */
function plaidTestKeys(): TestKeys {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  plaidKid ??= uuid();
  const kid = plaidKid;
  const createdAt = Math.floor(Date.now() / 1000) - 86_400;
  const fetch = testFetch(({ url, method, body }) => {
    if (!['production.plaid.com', 'sandbox.plaid.com'].includes(url.hostname)) return undefined;
    if (url.pathname !== '/webhook_verification_key/get' || method !== 'POST') return undefined;
    let asked: Record<string, unknown> = {};
    try {
      asked = JSON.parse(body) as Record<string, unknown>;
    } catch {}
    const error = (type: string, code: string, message: string) => ({
      status: 400,
      type: 'application/json',
      body: JSON.stringify({
        error_type: type,
        error_code: code,
        error_message: message,
        request_id: randomHex(15),
      }),
    });
    if (typeof asked.client_id !== 'string' || typeof asked.secret !== 'string') {
      return error(
        'INVALID_REQUEST',
        'MISSING_FIELDS',
        'the following required fields are missing: client_id, secret',
      );
    }
    if (asked.key_id !== kid) {
      return error('INVALID_INPUT', 'INVALID_WEBHOOK_VERIFICATION_KEY_ID', 'invalid key_id provided');
    }
    const jwk = publicKey.export({ format: 'jwk' });
    const key = {
      alg: 'ES256',
      created_at: createdAt,
      crv: jwk.crv,
      expired_at: null,
      kid,
      kty: 'EC',
      use: 'sig',
      x: jwk.x,
      y: jwk.y,
    };
    return { type: 'application/json', body: JSON.stringify({ key, request_id: randomHex(15) }) };
  });
  return makeTestKeys('plaid', { fetch }, { privateKey, kid } satisfies PlaidSigner);
}

/** Plaid's webhook bodies: keys sorted, indented by two spaces. */
function sortedJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedJson);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortedJson((value as Record<string, unknown>)[k])]),
  );
}

/** The client id and secret of `providerOptions('plaid', ...)`: any pair works with the test fetch. */
const PLAID_CLIENT = { clientId: '65f1c3a9d2e4b70019a3c5e1', secret: '0f3c2b9a8e7d6c5b4a39281706f5e4' };

// ---- Rows ----------------------------------------------------------------------------------------

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  ...certified,
  {
    name: 'discord',
    credential: 'keys',
    newId: () => snowflake(),
    samples: {
      APPLICATION_COMMAND: interaction(2, () => ({
        ...inGuild,
        data: {
          id: '1183420538651725846',
          name: 'order',
          options: [{ name: 'number', type: 3, value: `A-${randomHex(6).toUpperCase()}` }],
          type: 1,
        },
      })),
      MESSAGE_COMPONENT: interaction(3, ({ iso }) => ({
        ...inGuild,
        data: { component_type: 2, custom_id: 'confirm_order' },
        message: {
          id: snowflake(),
          channel_id: CHANNEL_ID,
          application_id: APPLICATION_ID,
          author: { id: APPLICATION_ID, username: 'orders', bot: true, discriminator: '7718' },
          content: 'Confirm the order?',
          components: [
            { type: 1, components: [{ type: 2, style: 1, label: 'Confirm', custom_id: 'confirm_order' }] },
          ],
          timestamp: iso,
          type: 20,
        },
      })),
      PING: interaction(1, () => ({ authorizing_integration_owners: {}, user: discordUser })),
      // A webhook event (Event Webhooks): no id, and no token.
      APPLICATION_AUTHORIZED: ({ iso }) => ({
        version: 1,
        application_id: APPLICATION_ID,
        type: 1,
        event: {
          type: 'APPLICATION_AUTHORIZED',
          timestamp: iso,
          data: {
            integration_type: 1,
            scopes: ['applications.commands'],
            user: { ...discordUser, id: snowflake() },
          },
        },
      }),
    },
    sign: discordSign,
    testKeys: discordTestKeys,
  },
  {
    name: 'plaid',
    credential: 'keys',
    // Plaid sends no event id; the sample's item_id takes it (37 letters and digits).
    newId: () => randomBytes(28).toString('base64url').replace(/[-_]/g, 'x').slice(0, 37),
    samples: {
      'TRANSACTIONS.SYNC_UPDATES_AVAILABLE': ({ id }) => ({
        environment: 'production',
        historical_update_complete: true,
        initial_update_complete: true,
        item_id: id,
        webhook_code: 'SYNC_UPDATES_AVAILABLE',
        webhook_type: 'TRANSACTIONS',
      }),
      'ITEM.ERROR': ({ id }) => ({
        environment: 'production',
        error: {
          display_message: null,
          error_code: 'ITEM_LOGIN_REQUIRED',
          error_message:
            "the login details of this item have changed (credentials, MFA, or required user action) and a user login is required to update this information. use Link's update mode to restore the item to a good state",
          error_type: 'ITEM_ERROR',
          status: 400,
        },
        item_id: id,
        webhook_code: 'ERROR',
        webhook_type: 'ITEM',
      }),
      'ITEM.PENDING_EXPIRATION': ({ id, at }) => ({
        consent_expiration_time: new Date(at.getTime() + 7 * 86_400_000)
          .toISOString()
          .replace(/\.\d{3}Z$/, 'Z'),
        environment: 'production',
        item_id: id,
        webhook_code: 'PENDING_EXPIRATION',
        webhook_type: 'ITEM',
      }),
      'AUTH.DEFAULT_UPDATE': ({ id }) => ({
        account_ids_with_new_auth: [],
        account_ids_with_updated_auth: { [randomHex(32)]: ['ACCOUNT_NUMBER'] },
        environment: 'production',
        error: null,
        item_id: id,
        webhook_code: 'DEFAULT_UPDATE',
        webhook_type: 'AUTH',
      }),
    },
    encode: (payload) => JSON.stringify(sortedJson(payload), null, 2),
    sign: plaidSign,
    testKeys: plaidTestKeys,
    providerOptions: ({ keys }) => ({ ...PLAID_CLIENT, ...keys?.trust }),
  },
  {
    name: 'sendgrid',
    credential: 'keys',
    newId: () => randomBytes(16).toString('base64url'),
    samples: {
      delivered: sendgridEvent('delivered', { ip: '168.1.1.1', response: '250 OK', tls: 1 }),
      open: sendgridEvent('open', {
        ip: '255.255.255.255',
        sg_machine_open: false,
        useragent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko)',
      }),
      bounce: sendgridEvent('bounce', {
        bounce_classification: 'Invalid Address',
        ip: '168.1.1.1',
        reason: '550 5.1.1 The email account that you tried to reach does not exist.',
        status: '5.1.1',
        type: 'bounce',
      }),
      click: sendgridEvent('click', {
        ip: '255.255.255.255',
        url: 'https://example.com/orders',
        url_offset: { index: 0, type: 'html' },
        useragent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko)',
      }),
    },
    encode: (payload) => sendgridBatch(Array.isArray(payload) ? payload : [payload]),
    sign: sendgridSign,
    testKeys: sendgridTestKeys,
  },
];
