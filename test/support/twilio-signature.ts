import { createHmac } from 'node:crypto';

/**
 * An `X-Twilio-Signature` as Twilio signs a form callback: base64 HMAC-SHA1, keyed with the auth
 * token, of the URL followed by every parameter's name and value, names in sorted order. The suites
 * that only need a signed callback use this; test/sdks/twilio.test.ts checks the provider against
 * the `twilio` package's own signer and validator.
 */
export function twilioSignature(token: string, url: string, params: Record<string, string>): string {
  const data = Object.keys(params)
    .sort()
    .reduce((acc, name) => acc + name + params[name], url);
  return createHmac('sha1', token).update(data).digest('base64');
}
