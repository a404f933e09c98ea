/** Every sender's row, by group (one file per signing family or two). */
import type { SenderName } from '../names.js';
import type { SenderRow } from '../types.js';
import { rows as bodyHmacA } from './body-hmac-a.js';
import { rows as bodyHmacB } from './body-hmac-b.js';
import { rows as keyed } from './keyed.js';
import { rows as standard } from './standard.js';
import { rows as timestamped } from './timestamped.js';

export const senderRows: readonly (SenderRow & { readonly name: SenderName })[] = [
  ...bodyHmacA,
  ...bodyHmacB,
  ...timestamped,
  ...standard,
  ...keyed,
].sort((a, b) => (a.name < b.name ? -1 : 1));
