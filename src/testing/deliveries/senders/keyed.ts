import type { SenderName } from '../names.js';
import type { SenderRow } from '../types.js';

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [];
