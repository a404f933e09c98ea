/**
 * The URLs a sender names (a key URL such as AWS SNS's `SigningCertURL` or PayPal's
 * `paypal-cert-url`, SNS's `SubscribeURL`), checked before anything is requested: https on the
 * default port, no credentials, a host the sender's declaration allows (an exact name, `*.suffix`
 * for one or more labels before `.suffix`, or an anchored RegExp). A URL that fails is refused as
 * `untrusted_key_url` without a request.
 */
import { ConfigError, VerificationError } from '../../errors.js';

/** An allowed key host: an exact name, `'*.example.com'` (any name ending in `.example.com`), or an anchored RegExp. */
export type AllowedHost = string | RegExp;

/** Refuses allowed-host entries that would match more than they say. */
export function checkAllowedHosts(label: string, hosts: readonly AllowedHost[]): readonly AllowedHost[] {
  if (!Array.isArray(hosts) || hosts.length === 0) {
    throw new ConfigError('invalid_option', `onceonly: ${label} fetches keys but allows no key host`);
  }
  for (const host of hosts) {
    if (host instanceof RegExp) {
      if (!host.source.startsWith('^') || !host.source.endsWith('$') || host.flags.includes('g')) {
        throw new ConfigError(
          'invalid_option',
          `onceonly: ${label} key host ${String(host)} must be anchored (^...$) and not global`,
        );
      }
    } else if (
      typeof host !== 'string' ||
      !/^(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)+$/.test(host) ||
      (host.startsWith('*.') && host.split('.').length < 3)
    ) {
      throw new ConfigError(
        'invalid_option',
        `onceonly: ${label} key host ${JSON.stringify(host)} must be a lower-case host name, or '*.' and a domain of at least two labels`,
      );
    }
  }
  return hosts;
}

/** Whether a host name matches one of the allowed-host rules. */
export function hostAllowed(host: string, allowed: readonly AllowedHost[]): boolean {
  for (const rule of allowed) {
    if (rule instanceof RegExp) {
      if (rule.test(host)) return true;
    } else if (rule.startsWith('*.')) {
      // One or more labels before the suffix: 'a.b.example.com' matches '*.example.com'; the bare
      // 'example.com' does not.
      const suffix = rule.slice(1);
      if (host.length > suffix.length && host.endsWith(suffix)) return true;
    } else if (host === rule) return true;
  }
  return false;
}

/**
 * A URL the sender names (a key URL, AWS SNS's `SubscribeURL`), parsed, when it may be requested:
 * https on the default port, no credentials, an allowed host; `untrusted_key_url` otherwise.
 * Makes no request. `what` names the URL in messages.
 */
export function checkSenderUrl(
  label: string,
  raw: string,
  allowed: readonly AllowedHost[],
  what = 'key URL',
): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw untrusted(label, 'is not a URL', what);
  }
  if (url.protocol !== 'https:') throw untrusted(label, 'is not https', what);
  if (url.username !== '' || url.password !== '') throw untrusted(label, 'carries credentials', what);
  if (url.port !== '') throw untrusted(label, 'names a port (only the https default is allowed)', what);
  if (!hostAllowed(url.hostname, allowed)) {
    throw untrusted(label, `is on ${url.hostname}, not a host the sender serves it from`, what);
  }
  return url;
}

export function untrusted(label: string, why: string, what = 'key URL'): VerificationError {
  return new VerificationError(
    'untrusted_key_url',
    `onceonly: the ${label} ${what} ${why}; it was not fetched`,
  );
}
