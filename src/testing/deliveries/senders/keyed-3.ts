/**
 * The key-signed senders' test material: key pairs made in the process, the test certificate
 * authority (a root and one intermediate per sender, made once per process), and the `fetch` a
 * provider is trusted through, answering the sender's own key URLs from memory. Every value handed
 * out in a `trust` is marked (`providers/families/testKeys.ts`), so a provider built with it says
 * it trusts test keys.
 *
 * Each `testKeys()` call makes a fresh key pair (a delivery signed with another call's keys must be
 * refused); the CA is made once, on first use. Only the SNS and PayPal signing keys are RSA (2048
 * bits, as theirs are, a fraction of a second each); the CA's keys are ECDSA P-256.
 */
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { markTestKeys } from '../../../providers/families/testKeys.js';
import type { TestKeyFetch, TestKeys } from '../types.js';
import { type Certificate, createCertificate, type Issuer, type Name } from '../x509.js';

const DAY = 86_400_000;

/**
 * The test keys of `provider`, frozen, with what a provider trusts them by marked: the public key,
 * the fetch, the roots (the array and each certificate's text).
 */
export function makeTestKeys<Trust extends object, Signer>(
  provider: string,
  trust: Trust,
  signer: Signer,
): TestKeys<Trust> {
  const { publicKey, fetch, certificateRoots } = trust as Record<string, unknown>;
  for (const value of [publicKey, fetch, certificateRoots]) if (value !== undefined) markTestKeys(value);
  if (Array.isArray(certificateRoots)) for (const pem of certificateRoots) markTestKeys(pem);
  return Object.freeze({ provider, trust: Object.freeze(trust), signer });
}

/** The private half of `keys`, which the caller already checked are `provider`'s. */
export function signerOf<Signer>(keys: TestKeys | undefined, provider: string): Signer {
  if (keys?.provider !== provider || typeof keys.signer !== 'object' || keys.signer === null) {
    throw new TypeError(
      `onceonly/testing: ${provider} signs with its own key: pass keys: testKeys('${provider}')`,
    );
  }
  return keys.signer as Signer;
}

// ---- The test CA ---------------------------------------------------------------------------------

const ORGANIZATION = 'onceonly/testing (test keys, never trust in production)';

interface Authority {
  readonly root: Certificate;
  readonly issuers: Map<string, Issuer & { readonly certificate: Certificate }>;
  readonly rootKey: KeyObject;
}

let authority: Authority | undefined;

function ec(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

/** The test root, made once per process: valid from a day ago for a year. */
function testAuthority(): Authority {
  if (!authority) {
    const { privateKey, publicKey } = ec();
    const now = Date.now();
    const root = createCertificate({
      subject: { commonName: 'onceonly test root CA', organization: ORGANIZATION },
      publicKey,
      issuer: { self: privateKey },
      notBefore: new Date(now - DAY),
      notAfter: new Date(now + 365 * DAY),
      ca: {},
    });
    authority = { root, rootKey: privateKey, issuers: new Map() };
  }
  return authority;
}

/** The test root certificate (PEM), for a provider's `certificateRoots`. */
export const testRootPem = (): string => testAuthority().root.pem;

/** The intermediate CA named `commonName`, issued by the test root, made once per process. */
export function intermediate(commonName: string): Issuer & { readonly certificate: Certificate } {
  const ca = testAuthority();
  let issuer = ca.issuers.get(commonName);
  if (!issuer) {
    const { privateKey, publicKey } = ec();
    const now = Date.now();
    const name: Name = { commonName, organization: ORGANIZATION };
    const certificate = createCertificate({
      subject: name,
      publicKey,
      issuer: { name: ca.root.name, privateKey: ca.rootKey, publicKey: ca.root.publicKey },
      notBefore: new Date(now - DAY),
      notAfter: new Date(now + 365 * DAY),
      ca: { pathLength: 0 },
    });
    issuer = { name, privateKey, publicKey, certificate };
    ca.issuers.set(commonName, issuer);
  }
  return issuer;
}

/**
 * A fresh RSA key pair and its signing certificate, issued by `issuer` to `dnsName` (as its common
 * name and only subjectAltName), valid from an hour ago for 30 days.
 */
export function signingCertificate(
  issuer: Issuer,
  dnsName: string,
  caIssuers?: string,
): { privateKey: KeyObject; certificate: Certificate } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const now = Date.now();
  const certificate = createCertificate({
    subject: { commonName: dnsName },
    publicKey,
    issuer,
    notBefore: new Date(now - DAY / 24),
    notAfter: new Date(now + 30 * DAY),
    dnsNames: [dnsName],
    caIssuers,
  });
  return { privateKey, certificate };
}

// ---- The trusted fetch ---------------------------------------------------------------------------

/** What a route answers: a status, a body, a content type. */
export interface Answer {
  readonly status?: number | undefined;
  readonly body: string | Uint8Array;
  readonly type: string;
}

/** A request as the test fetch sees it. */
export interface Asked {
  readonly url: URL;
  readonly method: string;
  readonly body: string;
}

/**
 * A `fetch` answering what `route` knows (the sender's key URLs), 404 anything else; never the
 * network. Marked as the kit's.
 */
export function testFetch(route: (asked: Asked) => Answer | undefined): TestKeyFetch {
  const fetch: TestKeyFetch = async (url, init = {}) => {
    init.signal?.throwIfAborted();
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    const answer = parsed
      ? route({ url: parsed, method: (init.method ?? 'GET').toUpperCase(), body: init.body ?? '' })
      : undefined;
    if (!answer) return new Response('Not Found', { status: 404, headers: { 'content-type': 'text/plain' } });
    const body = typeof answer.body === 'string' ? answer.body : new Uint8Array(answer.body);
    return new Response(body, { status: answer.status ?? 200, headers: { 'content-type': answer.type } });
  };
  return fetch;
}
