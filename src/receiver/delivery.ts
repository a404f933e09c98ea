/**
 * The raw delivery a handler sees (`ctx.delivery`) and the handler's context, as classes: V8 builds
 * an object literal with getters at run time, about half a microsecond each, on the path of every
 * delivery.
 */
import { idempotencyKeyFrom, signalFrom, stepOf, type WorkContext } from '../core/engine.js';
import type { Jsonified, StepContext } from '../core/steps.js';
import type { Lease } from '../core/types.js';
import type { HeaderReader } from '../providers/types.js';
import { asWebHeaders } from './body.js';
import type { HandlerContext } from './types.js';

const READER = Symbol('onceonly.headerReader');
const WEB_HEADERS = Symbol('onceonly.webHeaders');

/** `delivery.headers`: an own, enumerable accessor, as a literal's getter is, defined from one shared descriptor. */
const HEADERS_PROPERTY: PropertyDescriptor = {
  get(this: Delivery): Headers {
    // A web Headers only when the handler asks for one (Node's header objects stay as they are).
    this[WEB_HEADERS] ??= asWebHeaders(this[READER]);
    return this[WEB_HEADERS];
  },
  enumerable: true,
  configurable: true,
};

/**
 * The raw delivery a handler sees, and below the handler's context. Not object literals with
 * getters: V8 builds such a literal at run time, about half a microsecond each, on the path of every
 * delivery. Their getters are still own enumerable properties (a spread or `Object.keys` sees them,
 * as before), defined from shared descriptors; what they read is under symbols.
 */
export class Delivery {
  [WEB_HEADERS]: Headers | undefined = undefined;
  readonly [READER]: HeaderReader;
  declare readonly headers: Headers;
  constructor(
    readonly rawBody: Uint8Array,
    readonly receivedAt: Date,
    reader: HeaderReader,
  ) {
    this[READER] = reader;
    Object.defineProperty(this, 'headers', HEADERS_PROPERTY);
  }
}

/** The handler's context; `signal` is read through to the run (see `signalFrom`). */
export class Context implements HandlerContext<unknown> {
  readonly attempt: number;
  readonly lease: Lease;
  declare readonly signal: AbortSignal;
  constructor(
    readonly event: unknown,
    readonly type: string | undefined,
    readonly id: string | undefined,
    readonly key: string | undefined,
    work: WorkContext,
    readonly delivery: HandlerContext<unknown>['delivery'],
  ) {
    this.attempt = work.attempt;
    this.lease = work.lease;
    signalFrom(this, work);
  }

  step<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Jsonified<Awaited<R>>> {
    return stepOf(this, name, fn);
  }

  idempotencyKey(name?: string): string {
    return idempotencyKeyFrom(this, name);
  }
}
