/**
 * The signing mechanisms the senders share, written once; each sender's row gives its differences
 * as data (header, encoding, prefix, what is signed). Deliberately separate from the verifiers in
 * `providers/families/`: the kit signs the way the senders document it, so a verifier that read the
 * wrong bytes would fail against it (and the kit itself is checked against the senders' SDKs).
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { SignContext, Signed } from './types.js';

export type Encoding = 'hex' | 'base64' | 'base64url';
export type Algorithm = 'sha1' | 'sha256' | 'sha512';

/** HMAC over `parts` in order, encoded. */
export function hmac(
  algorithm: Algorithm,
  key: string | Uint8Array,
  parts: readonly (string | Uint8Array)[],
  encoding: Encoding,
): string {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest(encoding);
}

/** `length` random bytes as lower-case hex: the tail of a fresh id. */
export const randomHex = (length = 12): string =>
  randomBytes(Math.ceil(length / 2))
    .toString('hex')
    .slice(0, length);

/** A fresh UUID v4. */
export const uuid = (): string => crypto.randomUUID();

/**
 * The payload `text` as the JSON object a sender that rewrites or reads its body needs (AWS SNS,
 * Mailgun); anything else is a TypeError saying `what` it must be.
 */
export function jsonObject(text: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new TypeError(`onceonly/testing: ${what}`);
  }
  return parsed as Record<string, unknown>;
}

export interface BodyHmac {
  /** The header the signature travels in. */
  readonly header: string;
  readonly encoding: Encoding;
  /** Written before the encoded signature: `sha256=`. */
  readonly prefix?: string | undefined;
  /** @default 'sha256' */
  readonly algorithm?: Algorithm | undefined;
  /** The HMAC key from the secret as the dashboard shows it. @default its UTF-8 bytes */
  readonly key?: ((secret: string) => string | Uint8Array) | undefined;
  /** What is signed, in order. @default the body */
  readonly signed?: ((ctx: SignContext) => readonly (string | Uint8Array)[]) | undefined;
  /** The sender's other headers (its id, its event type). */
  readonly headers?: ((ctx: SignContext) => Record<string, string>) | undefined;
}

/** The body-HMAC family: one signature over the body (or what `signed` names) in one header. */
export function bodyHmac(spec: BodyHmac): (ctx: SignContext) => Signed {
  return (ctx) => {
    const key = spec.key ? spec.key(ctx.secret) : ctx.secret;
    const parts = spec.signed ? spec.signed(ctx) : [ctx.body];
    const signature = hmac(spec.algorithm ?? 'sha256', key, parts, spec.encoding);
    return { headers: { ...spec.headers?.(ctx), [spec.header]: `${spec.prefix ?? ''}${signature}` } };
  };
}

/**
 * The Standard Webhooks family (Svix and the senders on it): `v1,<base64 HMAC-SHA256>` over
 * `id.timestamp.body`, the key the base64 after `whsec_`; headers `webhook-*` or `svix-*`.
 */
export function standardWebhooks(prefix: 'webhook' | 'svix' = 'webhook'): (ctx: SignContext) => Signed {
  return (ctx) => {
    const key = Buffer.from(ctx.secret.replace(/^whsec_/, ''), 'base64');
    const signature = hmac('sha256', key, [`${ctx.id}.${ctx.seconds}.`, ctx.body], 'base64');
    return {
      headers: {
        [`${prefix}-id`]: ctx.id,
        [`${prefix}-timestamp`]: ctx.seconds,
        [`${prefix}-signature`]: `v1,${signature}`,
      },
    };
  };
}
