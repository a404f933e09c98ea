/**
 * Body-HMAC senders (first half): one HMAC of the body in a header (GitHub here; the rest in
 * body-hmac-a-2.ts and body-hmac-a-3.ts), and Adyen, whose HMAC of each item's fields rides in the
 * body.
 */
import type { SenderName } from '../names.js';
import { bodyHmac, hmac, randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow, SignContext, Signed } from '../types.js';
import { randomDigits, randomOf, rows as rows2 } from './body-hmac-a-2.js';
import { rows as rows3 } from './body-hmac-a-3.js';

const repository = {
  id: 1296269,
  node_id: 'MDEwOlJlcG9zaXRvcnkxMjk2MjY5',
  name: 'hello-world',
  full_name: 'octocat/hello-world',
  private: false,
};
const octocat = { login: 'octocat', id: 1, node_id: 'MDQ6VXNlcjE=', type: 'User' };

const github: SenderRow & { readonly name: SenderName } = {
  name: 'github',
  credential: 'secret',
  newSecret: () => randomHex(40),
  // GitHub's delivery id (X-GitHub-Delivery) is a GUID, unsigned; the event has no id of its own.
  newId: uuid,
  samples: {
    push: ({ seconds, iso }) => ({
      ref: 'refs/heads/main',
      before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
      after: randomHex(40),
      created: false,
      deleted: false,
      forced: false,
      compare: 'https://github.com/octocat/hello-world/compare/6113728f27ae...0d1a26e67d8f',
      commits: [
        {
          id: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
          message: 'Update README.md',
          timestamp: iso,
          author: { name: 'Monalisa Octocat', email: 'octocat@github.com', username: 'octocat' },
        },
      ],
      head_commit: {
        id: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
        message: 'Update README.md',
        timestamp: iso,
      },
      repository: { ...repository, pushed_at: seconds },
      pusher: { name: 'octocat', email: 'octocat@github.com' },
      sender: octocat,
    }),
    issues: ({ iso }) => ({
      action: 'opened',
      issue: {
        id: Number.parseInt(randomHex(8), 16),
        node_id: `I_kwDO${randomHex(16)}`,
        number: 1347,
        title: 'Found a bug',
        body: "I'm having a problem with this.",
        state: 'open',
        user: octocat,
        created_at: iso,
        updated_at: iso,
      },
      repository,
      sender: octocat,
    }),
    pull_request: ({ iso }) => ({
      action: 'opened',
      number: 2,
      pull_request: {
        id: Number.parseInt(randomHex(8), 16),
        node_id: `PR_kwDO${randomHex(16)}`,
        number: 2,
        state: 'open',
        title: 'Update the README with new information.',
        user: octocat,
        created_at: iso,
        head: { ref: 'changes', sha: randomHex(40) },
        base: { ref: 'main', sha: randomHex(40) },
      },
      repository,
      sender: octocat,
    }),
    ping: () => ({
      zen: 'Design for failure.',
      hook_id: 30,
      hook: { type: 'Repository', id: 30, active: true, events: ['push', 'issues'] },
      repository,
      sender: octocat,
    }),
  },
  sign: bodyHmac({
    header: 'x-hub-signature-256',
    encoding: 'hex',
    prefix: 'sha256=',
    headers: ({ id, type }) => ({
      'x-github-event': type,
      'x-github-delivery': id,
      'x-github-hook-id': '30',
      'user-agent': 'GitHub-Hookshot/044aadd',
    }),
  }),
};

// --- Adyen -----------------------------------------------------------------------------------

type Item = Record<string, unknown> & { additionalData?: Record<string, unknown> };

/**
 * What Adyen signs for one NotificationRequestItem: pspReference, originalReference,
 * merchantAccountCode, merchantReference, amount value, amount currency, eventCode and success,
 * joined by `:` (an absent one empty).
 */
function adyenSigned(item: Item): string {
  const amount = (item.amount ?? {}) as Record<string, unknown>;
  const fields = [
    item.pspReference,
    item.originalReference,
    item.merchantAccountCode,
    item.merchantReference,
    amount.value,
    amount.currency,
    item.eventCode,
    item.success,
  ];
  return fields.map((f) => (f === undefined || f === null ? '' : String(f))).join(':');
}

/** The items of a notification: `notificationItems[].NotificationRequestItem`. */
function adyenItems(text: string): { body: Record<string, unknown>; items: Item[] } | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const list = (body as { notificationItems?: unknown } | null)?.notificationItems;
  if (!Array.isArray(list)) return undefined;
  const items = list
    .map((entry) => (entry as { NotificationRequestItem?: unknown } | null)?.NotificationRequestItem)
    .filter((item): item is Item => typeof item === 'object' && item !== null && !Array.isArray(item));
  return { body: body as Record<string, unknown>, items };
}

/**
 * Signs each item as Adyen does: `additionalData.hmacSignature`, base64 HMAC-SHA256 of its signed
 * fields under the hex-decoded HMAC key. The body is the notification with the signatures in (sent
 * byte for byte when every item already carries its right signature); a body that is not a
 * notification is sent as it is, unsigned.
 */
function adyenSign({ text, secret }: SignContext): Signed {
  const parsed = adyenItems(text);
  if (!parsed) return { headers: {} };
  const key = Buffer.from(secret, 'hex');
  let changed = false;
  for (const item of parsed.items) {
    const signature = hmac('sha256', key, [adyenSigned(item)], 'base64');
    if (item.additionalData?.hmacSignature === signature) continue;
    item.additionalData = { ...item.additionalData, hmacSignature: signature };
    changed = true;
  }
  return changed ? { headers: {}, body: JSON.stringify(parsed.body) } : { headers: {} };
}

/** A PSP reference: 16 upper-case letters and digits. */
const pspReference = () => randomOf('ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', 16);

/**
 * A standard notification holding one item (Adyen sends one item per notification), its fields in
 * the order of Adyen's own example (the order is not fixed: a verifier reads fields, not bytes), so
 * that the signed ones fill the middle of the body and the unsigned eventDate, paymentMethod,
 * reason and additionalData sit at its ends.
 */
const adyenNotification =
  (fields: { originalReference?: boolean; reason: string; additionalData: Record<string, string> }) =>
  (ctx: SampleContext) => ({
    live: 'false',
    notificationItems: [
      {
        NotificationRequestItem: {
          eventCode: ctx.type,
          success: 'true',
          // Adyen's time, in CET.
          eventDate: new Date(ctx.at.getTime() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, '+01:00'),
          merchantAccountCode: 'AnalyticalEngineECOM',
          pspReference: ctx.id,
          ...(fields.originalReference ? { originalReference: pspReference() } : {}),
          merchantReference: `order-${randomDigits(6)}`,
          amount: { value: 1000, currency: 'EUR' },
          paymentMethod: 'visa',
          reason: fields.reason,
          additionalData: fields.additionalData,
        },
      },
    ],
  });

const adyen: SenderRow & { readonly name: SenderName } = {
  name: 'adyen',
  credential: 'secret',
  // The webhook's HMAC key as the Customer Area shows it: 64 upper-case hex characters.
  newSecret: () => randomHex(64).toUpperCase(),
  // The item's pspReference (the id is pspReference, eventCode and success together).
  newId: pspReference,
  samples: {
    // reason: the authorisation code, the card's last four digits and its expiry.
    AUTHORISATION: adyenNotification({
      reason: '058747:1111:03/2030',
      additionalData: { authCode: '058747', cardSummary: '1111', expiryDate: '03/2030' },
    }),
    CAPTURE: adyenNotification({ originalReference: true, reason: '', additionalData: {} }),
    REFUND: adyenNotification({ originalReference: true, reason: '', additionalData: {} }),
  },
  sign: adyenSign,
};

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  github,
  adyen,
  ...rows2,
  ...rows3,
];
