/**
 * The signature schemes of the asymmetric family, as data: each detached algorithm's key type and
 * hash (and RSA padding), each JWS \`alg\`'s scheme and signature encoding, and the one verify that
 * uses them (a key of the wrong type for the scheme never verifies, and never throws).
 */
import { constants, type KeyObject, verify as verifySignature } from 'node:crypto';

/** The detached-signature algorithms. */
export type AsymmetricAlgorithm =
  | 'ed25519'
  | 'ecdsa-p256-sha256'
  | 'ecdsa-p384-sha384'
  | 'rsa-sha1'
  | 'rsa-sha256'
  | 'rsa-sha512'
  | 'rsa-pss-sha256';

/** The JWS algorithms the family accepts; `none` and the HMAC ones (`HS256`...) never are. */
export type JwsAlgorithm = 'RS256' | 'RS384' | 'RS512' | 'PS256' | 'ES256' | 'ES384' | 'EdDSA';

export interface Scheme {
  readonly hash: string | null;
  readonly keyType: 'ed25519' | 'ec' | 'rsa';
  readonly curve?: string;
  readonly pss?: boolean;
}

export const SCHEMES: Record<AsymmetricAlgorithm, Scheme> = {
  ed25519: { hash: null, keyType: 'ed25519' },
  'ecdsa-p256-sha256': { hash: 'sha256', keyType: 'ec', curve: 'prime256v1' },
  'ecdsa-p384-sha384': { hash: 'sha384', keyType: 'ec', curve: 'secp384r1' },
  'rsa-sha1': { hash: 'sha1', keyType: 'rsa' },
  'rsa-sha256': { hash: 'sha256', keyType: 'rsa' },
  'rsa-sha512': { hash: 'sha512', keyType: 'rsa' },
  'rsa-pss-sha256': { hash: 'sha256', keyType: 'rsa', pss: true },
};

export const JWS: Record<JwsAlgorithm, { scheme: Scheme; dsa: 'der' | 'ieee-p1363' }> = {
  RS256: { scheme: SCHEMES['rsa-sha256'], dsa: 'der' },
  RS384: { scheme: { hash: 'sha384', keyType: 'rsa' }, dsa: 'der' },
  RS512: { scheme: SCHEMES['rsa-sha512'], dsa: 'der' },
  PS256: { scheme: SCHEMES['rsa-pss-sha256'], dsa: 'der' },
  ES256: { scheme: SCHEMES['ecdsa-p256-sha256'], dsa: 'ieee-p1363' },
  ES384: { scheme: SCHEMES['ecdsa-p384-sha384'], dsa: 'ieee-p1363' },
  EdDSA: { scheme: SCHEMES.ed25519, dsa: 'der' },
};

/** True when `key` is of the kind the scheme needs: a key of another kind never verifies. */
export function fits(key: KeyObject, scheme: Scheme): boolean {
  if (key.type !== 'public') return false;
  const type = key.asymmetricKeyType;
  if (scheme.keyType === 'rsa') return type === 'rsa' || (scheme.pss === true && type === 'rsa-pss');
  if (type !== scheme.keyType) return false;
  return scheme.curve === undefined || key.asymmetricKeyDetails?.namedCurve === scheme.curve;
}

/** One signature check; `false` for a key of the wrong kind or a signature node:crypto cannot read. */
export function verifyWith(
  scheme: Scheme,
  data: Uint8Array,
  key: KeyObject,
  signature: Uint8Array,
  dsaEncoding: 'der' | 'ieee-p1363' = 'der',
): boolean {
  if (!fits(key, scheme)) return false;
  try {
    if (scheme.keyType === 'ed25519') return verifySignature(null, data, key, signature);
    if (scheme.keyType === 'ec') return verifySignature(scheme.hash, data, { key, dsaEncoding }, signature);
    if (scheme.pss) {
      return verifySignature(
        scheme.hash,
        data,
        { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST },
        signature,
      );
    }
    return verifySignature(scheme.hash, data, key, signature);
  } catch {
    return false;
  }
}
