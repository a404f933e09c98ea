import { hasUnsafe, hasUnsafeButNewline, inertLines, oneLine } from './text.js';

/**
 * Where onceonly reports what must not pass unseen (failed runs, store failures, degraded runs,
 * conflicts, lost leases): any object with `warn` and `error`. The console fits, and so do pino,
 * winston and bunyan loggers; `false` silences it.
 */
export interface Logger {
  warn(message: string, ...details: unknown[]): unknown;
  error(message: string, ...details: unknown[]): unknown;
}

/** The logger an option names: the console by default, nothing for `false`. */
export function resolveLogger(option: Logger | false | undefined): Logger | undefined {
  if (option === false) return undefined;
  if (option === undefined) return console;
  if (typeof option !== 'object' || typeof option.warn !== 'function' || typeof option.error !== 'function') {
    throw new TypeError(
      'onceonly: logger must have warn() and error() methods (console, pino, winston...), or be false',
    );
  }
  return option;
}

/**
 * Writes one line at its level; a logger that throws changes nothing else. The line is made inert
 * (control characters escaped: see `text.ts`), since it may quote text from outside; so is an error
 * passed as `detail` whose message or stack holds such characters (a copy, the error itself is left
 * alone), as the console prints both raw.
 */
export function emit(
  logger: Logger | undefined,
  level: 'warn' | 'error',
  message: string,
  detail?: unknown,
): void {
  if (!logger) return;
  try {
    if (detail === undefined) logger[level](oneLine(message));
    else logger[level](oneLine(message), inertError(detail));
  } catch {
    // An observer's bug must not change the outcome.
  }
}

/** How deep a chain of causes (and an AggregateError's errors) is made inert; below it, one line. */
const MAX_CAUSE_DEPTH = 5;

/**
 * What was thrown, safe to hand to a logger: a string escaped to one line ({@link oneLine}), an error
 * whose message, stack, `cause` chain or AggregateError `errors` would act on a terminal as a copy
 * with those escaped (the stack keeps its line breaks, but a message's own line breaks are folded,
 * so it cannot fake a frame or a log line). Anything else, and an error with nothing to escape, is
 * handed over as it is. Below {@link MAX_CAUSE_DEPTH} levels (or in a cycle) a cause becomes its
 * one-line summary.
 */
function inertError(detail: unknown, depth = 0): unknown {
  if (typeof detail === 'string') return oneLine(detail);
  if (!(detail instanceof Error)) return detail;
  if (depth >= MAX_CAUSE_DEPTH) return causeOf(detail);
  const { message, stack } = detail;
  const messageUnsafe = typeof message === 'string' && hasUnsafe(message);
  const stackUnsafe = typeof stack === 'string' && hasUnsafeButNewline(stack);
  const hasCause = Object.hasOwn(detail, 'cause');
  const cause = hasCause ? inertError(detail.cause, depth + 1) : undefined;
  const errors =
    detail instanceof AggregateError && Array.isArray(detail.errors)
      ? (detail.errors as unknown[]).map((e) => inertError(e, depth + 1))
      : undefined;
  const causeChanged = hasCause && cause !== detail.cause;
  const errorsChanged = errors?.some((e, i) => e !== (detail as AggregateError).errors[i]) ?? false;
  if (!messageUnsafe && !stackUnsafe && !causeChanged && !errorsChanged) return detail;
  const copy = Object.create(Object.getPrototypeOf(detail) as object) as Error;
  for (const name of Object.getOwnPropertyNames(detail)) {
    Object.defineProperty(copy, name, Object.getOwnPropertyDescriptor(detail, name)!);
  }
  const set = (name: string, value: unknown) =>
    Object.defineProperty(copy, name, { value, writable: true, configurable: true });
  if (messageUnsafe) set('message', oneLine(message));
  if (typeof stack === 'string' && (messageUnsafe || stackUnsafe)) {
    // The stack starts with the message: its line breaks folded there, the frames' kept.
    const at = messageUnsafe ? stack.indexOf(message) : -1;
    const folded =
      at === -1 ? stack : stack.slice(0, at) + oneLine(message) + stack.slice(at + message.length);
    set('stack', inertLines(folded));
  }
  if (causeChanged) set('cause', cause);
  if (errorsChanged) set('errors', errors);
  return copy;
}

/**
 * The cause of a failure in one short line: `Name: message` (or `code`), newlines folded, other
 * control characters escaped, cut at 300 characters. Only the error's own text: never a body, header or secret of onceonly's.
 */
export function causeOf(error: unknown): string {
  if (error === undefined) return 'unknown cause';
  let text: string;
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const message = error.message.replace(/^onceonly: /, '');
    text = `${error.name}${typeof code === 'string' && !message.includes(code) ? ` [${code}]` : ''}: ${message}`;
  } else {
    text = String(error);
  }
  // Newlines fold to a space; every other control character (CR, ESC, BEL, U+2028...) is escaped.
  text = oneLine(text.replace(/\s*\n\s*/g, ' '));
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/**
 * One log line per kind and interval, for failures anyone can cause without credentials (a request
 * naming a key that cannot be fetched): the first line of a kind is written at once, the next ones
 * within `intervalMs` are counted, and one line at the interval's end says how many there were.
 * So a flood costs two lines a minute, not one a request.
 */
export function logThrottle(
  intervalMs: number,
): (kind: string, write: () => void, summary: (held: number, seconds: number) => void) => void {
  const open = new Map<string, { held: number }>();
  return (kind, write, summary) => {
    const window = open.get(kind);
    if (window) {
      window.held++;
      return;
    }
    write();
    const fresh = { held: 0 };
    open.set(kind, fresh);
    const timer = setTimeout(() => {
      open.delete(kind);
      if (fresh.held > 0) summary(fresh.held, Math.round(intervalMs / 1000));
    }, intervalMs);
    (timer as { unref?: () => void }).unref?.();
  };
}
