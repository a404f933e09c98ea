/**
 * The signing certificate a sender serves (AWS SNS, PayPal) is trusted only when it chains to a
 * root certificate and is issued to the sender's name, as a TLS client checks a server: a
 * certificate anyone can make (self-signed, or from a look-alike host) never vouches for a message.
 *
 * The chain is built from the leaf up: each link must be a CA certificate that issued the one below
 * it (names and signature checked), every link within its validity dates, ending at a root of
 * Node's store (`tls.rootCertificates`, or the roots the caller passes instead). Links come from
 * what the sender served after the leaf (PayPal serves its chain), or, where it served the leaf
 * alone (SNS), from the leaf's own "CA Issuers" URL: that fetch may be plain http, since the
 * certificate it brings is trusted only through its signature, and only from the hosts the sender's
 * CA serves them from.
 */
import { type KeyObject, X509Certificate } from 'node:crypto';
import { type AllowedHost, hostAllowed } from './senderUrl.js';

/** How a sender's signing certificate is checked. */
export interface CertificateRules {
  /** The names the certificate must be issued to (a DNS name in its SAN, or its CN without one). */
  readonly subjects: (url: URL) => readonly string[];
  /** Hosts a missing intermediate may be fetched from, by the "CA Issuers" URL of the one below. */
  readonly issuerHosts: readonly AllowedHost[];
}

const MAX_DEPTH = 4;

let systemRoots: readonly X509Certificate[] | undefined;

/** Node's own root store, parsed once on first use. */
async function nodeRoots(): Promise<readonly X509Certificate[]> {
  if (!systemRoots) {
    const { rootCertificates } = await import('node:tls');
    systemRoots = rootCertificates.flatMap((pem) => {
      try {
        return [new X509Certificate(pem)];
      } catch {
        return [];
      }
    });
  }
  return systemRoots;
}

/** Parses root certificates passed as PEM; throws on one that is not a certificate. @internal */
export function parseRoots(pems: readonly string[]): readonly X509Certificate[] {
  return pems.map((pem) => new X509Certificate(pem));
}

const within = (cert: X509Certificate, now: number) =>
  Date.parse(cert.validFrom) <= now && now <= Date.parse(cert.validTo);

/** Whether `parent` issued `child`: names match and `child`'s signature verifies under its key. */
const issued = (child: X509Certificate, parent: X509Certificate) =>
  child.checkIssued(parent) && child.verify(parent.publicKey);

/** The "CA Issuers" URL of a certificate's Authority Information Access, if any. */
function caIssuers(cert: X509Certificate): string | undefined {
  const match = /CA Issuers - URI:(\S+)/.exec(cert.infoAccess ?? '');
  return match?.[1];
}

/**
 * An intermediate's URL, when it may be fetched: http or https (what it brings is trusted through
 * its signature alone, never its transport), the default port, no credentials, an allowed host.
 */
function issuerUrl(raw: string, hosts: readonly AllowedHost[]): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error('its issuer URL is not a URL');
  }
  if (
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.username !== '' ||
    url.password !== '' ||
    url.port !== '' ||
    !hostAllowed(url.hostname, hosts)
  ) {
    throw new Error(
      `its issuer certificate is on ${url.hostname || 'no host'}, not a host its CA serves from`,
    );
  }
  return url.href;
}

/** Splits a PEM document into its certificates (at most `MAX_DEPTH + 1`). */
function certificatesIn(text: string): X509Certificate[] {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error('it holds no certificate');
  if (blocks.length > MAX_DEPTH + 1) throw new Error(`it holds ${blocks.length} certificates`);
  return blocks.map((block) => new X509Certificate(block));
}

/**
 * The public key of the certificate at `url`, once its chain and name check out; throws an Error
 * saying why not. `fetchIssuer` brings the DER or PEM bytes of an intermediate by its URL.
 * @internal
 */
export async function verifiedCertificateKey(
  text: string,
  url: URL,
  rules: CertificateRules,
  options: {
    now: number;
    roots: readonly X509Certificate[] | undefined;
    fetchIssuer: (url: string) => Promise<Buffer>;
  },
): Promise<KeyObject> {
  const { now } = options;
  const [leaf, ...served] = certificatesIn(text);
  if (!leaf || !within(leaf, now)) throw new Error('the certificate is expired or not yet valid');
  if (leaf.ca) throw new Error('the certificate is a CA certificate, not a signing certificate');
  const names = rules.subjects(url);
  if (!names.some((name) => leaf.checkHost(name) !== undefined)) {
    throw new Error(`the certificate is not issued to ${names.join(' or ')}`);
  }
  const roots = options.roots ?? (await nodeRoots());
  let current = leaf;
  for (let depth = 0; depth <= MAX_DEPTH; depth++) {
    if (roots.some((root) => within(root, now) && issued(current, root))) return leaf.publicKey;
    let parent = served.find((c) => c.ca && within(c, now) && issued(current, c));
    if (!parent) {
      const next = caIssuers(current);
      if (next === undefined) break;
      const bytes = await options.fetchIssuer(issuerUrl(next, rules.issuerHosts));
      const candidate = new X509Certificate(bytes);
      if (candidate.ca && within(candidate, now) && issued(current, candidate)) parent = candidate;
    }
    if (!parent) break;
    current = parent;
  }
  throw new Error('the certificate does not chain to a trusted root certificate');
}
