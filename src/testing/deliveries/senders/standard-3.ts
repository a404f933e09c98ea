/**
 * Twilio: `X-Twilio-Signature`, the base64 HMAC-SHA1 (keyed with the Auth Token) of the URL it
 * calls followed by every form parameter sorted by name, each name then its value. A JSON body
 * (Event Streams' webhook sinks) is bound instead by a `bodySHA256` query parameter, the hex
 * SHA-256 of the body, added to the URL that is signed (with no parameters after it).
 */
import { createHash } from 'node:crypto';
import type { SenderName } from '../names.js';
import { hmac, randomHex, uuid } from '../sign.js';
import type { SenderRow, SignContext, Signed } from '../types.js';

const ACCOUNT = 'AC7f6c2d9e0b4a41f5a3c8e1d2b6f0a9c4';
const sid = (prefix: string) => `${prefix}${randomHex(32)}`;

/** The form parameters, as Twilio sends them: text values only. */
function formOf(payload: Record<string, unknown>): string {
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(payload)) {
    if (Array.isArray(value)) for (const v of value) form.append(name, String(v));
    else if (value !== undefined && value !== null) form.append(name, String(value));
  }
  return form.toString();
}

/**
 * An object payload is a form (Twilio's callbacks) unless it nests objects; an array or a nested
 * object is JSON (Event Streams' CloudEvents).
 */
function encode(payload: Record<string, unknown> | readonly unknown[]): string {
  if (Array.isArray(payload)) return JSON.stringify(payload);
  const values = Object.values(payload);
  const nested = values.some((v) => v !== null && typeof v === 'object' && !Array.isArray(v));
  return nested ? JSON.stringify(payload) : formOf(payload as Record<string, unknown>);
}

/** A JSON body starts with `{` or `[` (after any whitespace); a form body never does. */
const isJson = (text: string) => /^\s*[{[]/.test(text);

/** What Twilio signs after the URL: each parameter name, sorted, then its values (sorted when repeated). */
function sortedParams(text: string): string {
  const byName = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(text)) {
    const values = byName.get(name);
    if (values) values.push(value);
    else byName.set(name, [value]);
  }
  let out = '';
  for (const name of [...byName.keys()].sort()) {
    const values = byName.get(name)!;
    for (const value of values.length > 1 ? [...values].sort() : values) out += name + value;
  }
  return out;
}

/** The URL with `bodySHA256=<hash>` as its last query parameter (replacing one already there). */
function withBodyHash(url: string, hash: string): string {
  const bare = url.replace(/([?&])bodySHA256=[^&#]*&?/, '$1').replace(/[?&]$/, '');
  return `${bare}${bare.includes('?') ? '&' : '?'}bodySHA256=${hash}`;
}

function twilioSign(ctx: SignContext): Signed {
  const common = { 'user-agent': 'TwilioProxy/1.1', 'i-twilio-idempotency-token': ctx.id };
  if (isJson(ctx.text)) {
    const url = withBodyHash(ctx.url, createHash('sha256').update(ctx.body).digest('hex'));
    return {
      url,
      headers: {
        ...common,
        'content-type': 'application/json',
        'x-twilio-signature': hmac('sha1', ctx.secret, [url], 'base64'),
      },
    };
  }
  return {
    headers: {
      ...common,
      'x-twilio-signature': hmac('sha1', ctx.secret, [ctx.url, sortedParams(ctx.text)], 'base64'),
    },
  };
}

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    // The Auth Token (32 hex characters) signs; a callback has no id of its own, the kit's id is
    // its I-Twilio-Idempotency-Token (the same on Twilio's retries).
    name: 'twilio',
    credential: 'secret',
    newSecret: () => randomHex(32),
    newId: uuid,
    contentType: 'application/x-www-form-urlencoded',
    encode,
    samples: {
      // A Messaging status callback (the StatusCallback of a sent message).
      'message-status': () => {
        const message = sid('SM');
        return {
          AccountSid: ACCOUNT,
          ApiVersion: '2010-04-01',
          From: '+15017122661',
          MessageSid: message,
          MessageStatus: 'delivered',
          MessagingServiceSid: sid('MG'),
          RawDlrDoneDate: '2612041448',
          SmsSid: message,
          SmsStatus: 'delivered',
          To: '+15558675310',
        };
      },
      // An incoming message (the phone number's messaging webhook).
      'incoming-message': () => {
        const message = sid('SM');
        return {
          AccountSid: ACCOUNT,
          ApiVersion: '2010-04-01',
          Body: 'Hello from a phone ✓',
          From: '+15558675310',
          FromCity: 'SAN FRANCISCO',
          FromCountry: 'US',
          FromState: 'CA',
          FromZip: '94103',
          MessageSid: message,
          NumMedia: '0',
          NumSegments: '1',
          SmsMessageSid: message,
          SmsSid: message,
          SmsStatus: 'received',
          To: '+15017122661',
          ToCity: '',
          ToCountry: 'US',
          ToState: 'CA',
          ToZip: '',
        };
      },
      // A Voice status callback (call-progress events) at the end of a call.
      'call-status': ({ at }) => ({
        AccountSid: ACCOUNT,
        ApiVersion: '2010-04-01',
        CallDuration: '12',
        CallSid: sid('CA'),
        CallStatus: 'completed',
        CallbackSource: 'call-progress-events',
        Called: '+15558675310',
        Caller: '+15017122661',
        Direction: 'outbound-api',
        Duration: '1',
        From: '+15017122661',
        SequenceNumber: '3',
        Timestamp: at.toUTCString().replace('GMT', '+0000'),
        To: '+15558675310',
      }),
      // An Event Streams webhook sink's event (a CloudEvent, JSON, bound by bodySHA256).
      'com.twilio.messaging.message.delivered': ({ iso }) => {
        const message = sid('SM');
        return JSON.stringify({
          specversion: '1.0',
          type: 'com.twilio.messaging.message.delivered',
          source: `/2010-04-01/Accounts/${ACCOUNT}/Messages/${message}.json`,
          id: sid('EZ'),
          dataschema: 'https://events-schemas.twilio.com/Messaging.MessageStatus/7',
          datacontenttype: 'application/json',
          time: iso,
          data: {
            messageSid: message,
            timestamp: iso,
            accountSid: ACCOUNT,
            eventName: 'com.twilio.messaging.message.delivered',
            apiVersion: '2010-04-01',
            from: '+15017122661',
            to: '+15558675310',
            messageStatus: 'DELIVERED',
            numberOfSegments: 1,
            dateUpdated: iso,
          },
        });
      },
    },
    sign: twilioSign,
  },
];
