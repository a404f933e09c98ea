import type { SenderName, SignedDelivery } from '../../../src/testing/index.js';

/** A sender's official verifier: throws (or returns or resolves false) when the delivery does not verify. */
export type SdkCheck = (d: SignedDelivery, secret: string) => unknown;

export type Checks = Partial<Record<SenderName, { sdk: string; verify: SdkCheck }>>;
