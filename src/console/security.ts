/**
 * The console's safety: the headers every answer carries (a Content-Security-Policy that allows no
 * script at all, no framing, forms only to itself), a session cookie and the CSRF token derived
 * from it (an HMAC of the console's secret over the operator and the session: no server state), and
 * the same-origin check every action passes before the token is even looked at.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const CSP =
  "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Headers on every answer of the console. */
export function securityHeaders(type: string): Headers {
  return new Headers({
    'content-type': type,
    'content-security-policy': CSP,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` on the
    // console's own form posts, which the origin check could not tell from a sandboxed page's.
    'referrer-policy': 'same-origin',
    'cache-control': 'no-store',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
  });
}

export const SESSION_COOKIE = 'onceonly_console';

/** The session id the browser holds, when it sent a well-formed one. */
export function sessionOf(request: Request): string | undefined {
  const cookies = request.headers.get('cookie') ?? '';
  for (const part of cookies.split(';')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === SESSION_COOKIE && value !== undefined && /^[A-Za-z0-9_-]{22,64}$/.test(value)) return value;
  }
  return undefined;
}

export function newSession(): string {
  return randomBytes(18).toString('base64url');
}

/** The Set-Cookie line of a new session: HttpOnly, SameSite=Strict, Secure over HTTPS, scoped to the console. */
export function sessionCookie(session: string, request: Request, path: string): string {
  const secure = new URL(request.url).protocol === 'https:' ? '; Secure' : '';
  return `${SESSION_COOKIE}=${session}; Path=${path || '/'}; HttpOnly; SameSite=Strict${secure}`;
}

/** The CSRF token of an operator's session: HMAC-SHA256 of both under the console's secret. */
export function csrfToken(secret: Uint8Array, operator: string, session: string): string {
  return createHmac('sha256', secret).update(`${operator}\n${session}`).digest('base64url');
}

export function csrfValid(secret: Uint8Array, operator: string, session: string, given: string): boolean {
  const want = Buffer.from(csrfToken(secret, operator, session));
  const got = Buffer.from(given);
  return want.length === got.length && timingSafeEqual(want, got);
}

/**
 * Whether a POST comes from the console's own pages. `Sec-Fetch-Site`, where the browser sends it
 * (no page can set it), must say `same-origin`; an `Origin`, when one is sent, must be among the
 * allowed (the request's own by default). Neither header: refused.
 */
export function sameOrigin(request: Request, origins: readonly string[] | undefined): boolean {
  const site = request.headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin') return false;
  const origin = request.headers.get('origin');
  if (origin === null) return site === 'same-origin';
  const allowed = origins ?? [new URL(request.url).origin];
  return allowed.includes(origin);
}
