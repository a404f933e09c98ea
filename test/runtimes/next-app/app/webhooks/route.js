import { webhook } from '../../../../../src/adapters/next.ts';
import { state } from '../state.js';

export const POST = webhook(state().receiver);
