// One fixture per server process, shared by every route (route bundles may hold separate module copies).
import { fixture, handshakeFixture } from '../../../adapters/behaviour.ts';
import { outcomeFixture } from '../../../adapters/outcomes.ts';

export function state() {
  globalThis.__onceonlyNextFixture ??= {
    ...fixture(),
    started: new Map(),
    release: new Map(),
    outcomeClosed: outcomeFixture('closed'),
    outcomeOpen: outcomeFixture('open'),
    handshake: handshakeFixture(),
  };
  return globalThis.__onceonlyNextFixture;
}
