/**
 * X.509 v3 certificates made in-process with node:crypto, for the test kit's senders whose signing
 * certificate is fetched and checked against a chain (AWS SNS, PayPal): a self-signed root CA, an
 * intermediate it issues, and leaf certificates issued to the sender's name. The kit ships in the
 * package and cannot run openssl, so this is a minimal DER encoder of exactly what those checks
 * read (RFC 5280): version, serial, issuer and subject names, validity, the public key, and the
 * extensions basicConstraints, keyUsage, subjectAltName (DNS names), authorityInfoAccess (CA
 * Issuers), subject and authority key identifiers. Signed with RSA (SHA-256) or ECDSA (P-256 with
 * SHA-256). For tests only: nothing here checks what it is asked to certify.
 */
import { createHash, type KeyObject, randomBytes, sign } from 'node:crypto';

// ---- DER ----------------------------------------------------------------------------------------

/** A DER element: tag, definite length, content. */
function tlv(tag: number, content: Uint8Array): Buffer {
  const n = content.length;
  let length: number[];
  if (n < 0x80) length = [n];
  else {
    const bytes: number[] = [];
    for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
    length = [0x80 | bytes.length, ...bytes];
  }
  return Buffer.concat([Buffer.from([tag, ...length]), content]);
}

const sequence = (...items: Uint8Array[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Uint8Array[]) => tlv(0x31, Buffer.concat(items));
/** `[n] EXPLICIT`: a constructed context-specific tag around one element. */
const explicit = (n: number, item: Uint8Array) => tlv(0xa0 | n, item);
const octetString = (bytes: Uint8Array) => tlv(0x04, bytes);
const boolean = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
const NULL = Buffer.from([0x05, 0x00]);

/** An INTEGER from unsigned big-endian bytes: minimal, with a leading zero when the top bit is set. */
function integer(value: number | Uint8Array): Buffer {
  let bytes = typeof value === 'number' ? bigEndian(value) : Buffer.from(value);
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  bytes = bytes.subarray(start);
  return tlv(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

function bigEndian(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`x509: ${value} is not a count`);
  const bytes: number[] = [];
  for (let rest = value; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from(bytes.length > 0 ? bytes : [0]);
}

/** An OBJECT IDENTIFIER from its dotted form. */
function oid(dotted: string): Buffer {
  const arcs = dotted.split('.').map(Number);
  const out: number[] = [40 * arcs[0]! + arcs[1]!];
  for (const arc of arcs.slice(2)) {
    const base128: number[] = [arc & 0x7f];
    for (let rest = Math.floor(arc / 128); rest > 0; rest = Math.floor(rest / 128)) {
      base128.unshift(0x80 | (rest & 0x7f));
    }
    out.push(...base128);
  }
  return tlv(0x06, Buffer.from(out));
}

/** A BIT STRING of whole bytes (a key, a signature). */
const bitString = (bytes: Uint8Array) => tlv(0x03, Buffer.concat([Buffer.from([0]), bytes]));

/**
 * A BIT STRING of named bits (bit 0 is the most significant of the first byte), DER: trailing zero
 * bits dropped and counted as unused.
 */
function namedBits(bits: readonly number[]): Buffer {
  const last = Math.max(...bits);
  const bytes = Buffer.alloc(Math.floor(last / 8) + 1);
  for (const bit of bits) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
  return tlv(0x03, Buffer.concat([Buffer.from([7 - (last & 7)]), bytes]));
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280, 4.1.2.5), to the second, in UTC. */
function time(at: Date): Buffer {
  const iso = at.toISOString();
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const year = at.getUTCFullYear();
  if (year < 1950 || year > 9999) throw new RangeError(`x509: ${iso} cannot be a certificate's time`);
  return year < 2050
    ? tlv(0x17, Buffer.from(digits.slice(2), 'ascii'))
    : tlv(0x18, Buffer.from(digits, 'ascii'));
}

// ---- Names, algorithms, extensions ---------------------------------------------------------------

/** A distinguished name: its common name, and optionally organisation and country. */
export interface Name {
  readonly commonName: string;
  readonly organization?: string | undefined;
  /** Two letters. */
  readonly country?: string | undefined;
}

const ATTRIBUTE = { country: '2.5.4.6', organization: '2.5.4.10', commonName: '2.5.4.3' } as const;

/** The Name as RFC 5280 encodes it: country, organisation, common name, one RDN each. */
function name(n: Name): Buffer {
  const rdn = (type: string, value: Buffer) => set(sequence(oid(type), value));
  const rdns: Buffer[] = [];
  if (n.country !== undefined) {
    rdns.push(rdn(ATTRIBUTE.country, tlv(0x13, Buffer.from(n.country, 'ascii')))); // PrintableString
  }
  if (n.organization !== undefined) {
    rdns.push(rdn(ATTRIBUTE.organization, tlv(0x0c, Buffer.from(n.organization, 'utf8'))));
  }
  rdns.push(rdn(ATTRIBUTE.commonName, tlv(0x0c, Buffer.from(n.commonName, 'utf8')))); // UTF8String
  return sequence(...rdns);
}

/** The signature algorithm a key signs certificates with, and the digest node:crypto uses. */
function algorithmOf(key: KeyObject): Buffer {
  const type = key.asymmetricKeyType;
  if (type === 'rsa') return sequence(oid('1.2.840.113549.1.1.11'), NULL); // sha256WithRSAEncryption
  if (type === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    return sequence(oid('1.2.840.10045.4.3.2')); // ecdsa-with-SHA256
  }
  throw new TypeError(`x509: an issuer key must be RSA or ECDSA P-256, not ${type}`);
}

/** The key identifier of RFC 5280, 4.2.1.2 (1): SHA-1 of the subjectPublicKey's bits. */
function keyIdentifier(spki: Buffer): Buffer {
  // The SPKI is SEQUENCE { AlgorithmIdentifier, BIT STRING }: the identifier hashes the bit string's
  // content past its unused-bits byte.
  const bits = readElement(spki, readElement(spki, 0).content).next;
  const element = readElement(spki, bits);
  return createHash('sha1')
    .update(spki.subarray(element.content + 1, element.end))
    .digest();
}

/** Where the element at `offset` starts its content and ends (DER, definite lengths). */
function readElement(der: Buffer, offset: number): { content: number; end: number; next: number } {
  const first = der[offset + 1]!;
  let length = first;
  let content = offset + 2;
  if (first & 0x80) {
    length = 0;
    for (let i = 0; i < (first & 0x7f); i++) length = length * 256 + der[content + i]!;
    content += first & 0x7f;
  }
  return { content, end: content + length, next: content + length };
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical
    ? sequence(oid(id), boolean(true), octetString(value))
    : sequence(oid(id), octetString(value));
}

const KEY_USAGE = { digitalSignature: 0, keyEncipherment: 2, keyCertSign: 5, cRLSign: 6 } as const;

// ---- Certificates --------------------------------------------------------------------------------

/** What issues a certificate: its name and key pair (a root's own, for a self-signed one). */
export interface Issuer {
  readonly name: Name;
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

export interface CertificateSpec {
  readonly subject: Name;
  /** The key certified. */
  readonly publicKey: KeyObject;
  /** Who signs it; `self` with the subject's own private key for a root. */
  readonly issuer: Issuer | { readonly self: KeyObject };
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** A CA certificate (`pathLength`: how many CAs may follow it); a signing (leaf) one otherwise. */
  readonly ca?: { readonly pathLength?: number | undefined } | undefined;
  /** DNS names for subjectAltName (a leaf's, as TLS checks a host). */
  readonly dnsNames?: readonly string[] | undefined;
  /** The "CA Issuers" URL of its issuer's certificate (authorityInfoAccess). */
  readonly caIssuers?: string | undefined;
  /** @default 16 random bytes */
  readonly serial?: Uint8Array | undefined;
}

/** A certificate made: DER, PEM, and what it takes to issue others with it (a CA's). */
export interface Certificate {
  readonly der: Buffer;
  readonly pem: string;
  readonly name: Name;
  readonly publicKey: KeyObject;
}

/** Makes and signs one certificate. */
export function createCertificate(spec: CertificateSpec): Certificate {
  const selfSigned = 'self' in spec.issuer;
  const issuerName = 'self' in spec.issuer ? spec.subject : spec.issuer.name;
  const signingKey = 'self' in spec.issuer ? spec.issuer.self : spec.issuer.privateKey;
  const issuerPublic = 'self' in spec.issuer ? spec.publicKey : spec.issuer.publicKey;
  const spki = spec.publicKey.export({ type: 'spki', format: 'der' });
  const algorithm = algorithmOf(signingKey);
  const serial = Buffer.from(spec.serial ?? randomBytes(16));
  // Positive and non-zero (RFC 5280, 4.1.2.2).
  if (spec.serial === undefined) serial[0] = (serial[0]! & 0x7f) | 0x01;
  const tbs = sequence(
    explicit(0, integer(2)), // v3
    integer(serial),
    algorithm,
    name(issuerName),
    sequence(time(spec.notBefore), time(spec.notAfter)),
    name(spec.subject),
    spki,
    explicit(3, sequence(...extensions(spec, spki, issuerPublic, selfSigned))),
  );
  const signature = sign('sha256', tbs, { key: signingKey, dsaEncoding: 'der' });
  const der = sequence(tbs, algorithm, bitString(signature));
  const base64 = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return {
    der,
    pem: `-----BEGIN CERTIFICATE-----\n${base64}-----END CERTIFICATE-----\n`,
    name: spec.subject,
    publicKey: spec.publicKey,
  };
}

function extensions(
  spec: CertificateSpec,
  spki: Buffer,
  issuerPublic: KeyObject,
  selfSigned: boolean,
): Buffer[] {
  const out: Buffer[] = [];
  const ca = spec.ca;
  out.push(
    extension(
      '2.5.29.19', // basicConstraints
      true,
      ca
        ? sequence(boolean(true), ...(ca.pathLength === undefined ? [] : [integer(ca.pathLength)]))
        : sequence(), // cA FALSE is the DEFAULT: left out in DER
    ),
  );
  const usage = ca
    ? [KEY_USAGE.keyCertSign, KEY_USAGE.cRLSign]
    : spec.publicKey.asymmetricKeyType === 'rsa'
      ? [KEY_USAGE.digitalSignature, KEY_USAGE.keyEncipherment]
      : [KEY_USAGE.digitalSignature];
  out.push(extension('2.5.29.15', true, namedBits(usage))); // keyUsage
  out.push(extension('2.5.29.14', false, octetString(keyIdentifier(spki)))); // subjectKeyIdentifier
  if (!selfSigned) {
    // authorityKeyIdentifier: [0] IMPLICIT keyIdentifier.
    const issuerId = keyIdentifier(issuerPublic.export({ type: 'spki', format: 'der' }));
    out.push(extension('2.5.29.35', false, sequence(tlv(0x80, issuerId))));
  }
  if (spec.dnsNames && spec.dnsNames.length > 0) {
    // subjectAltName: dNSName is [2] IMPLICIT IA5String.
    const names = spec.dnsNames.map((dns) => tlv(0x82, Buffer.from(dns, 'ascii')));
    out.push(extension('2.5.29.17', false, sequence(...names)));
  }
  if (spec.caIssuers !== undefined) {
    // authorityInfoAccess: id-ad-caIssuers, uniformResourceIdentifier is [6] IMPLICIT IA5String.
    const access = sequence(oid('1.3.6.1.5.5.7.48.2'), tlv(0x86, Buffer.from(spec.caIssuers, 'ascii')));
    out.push(extension('1.3.6.1.5.5.7.1.1', false, sequence(access)));
  }
  return out;
}
