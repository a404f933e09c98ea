import { hasUnsafe, inertLines, oneLine } from './text.js';

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

/** An error whose message or stack would act on a terminal, as a copy with those characters escaped. */
function inertError(detail: unknown): unknown {
  if (!(detail instanceof Error)) return detail;
  const { message, stack } = detail;
  if (!hasUnsafe(message) && !(typeof stack === 'string' && hasUnsafe(stack))) return detail;
  const copy = Object.create(Object.getPrototypeOf(detail) as object) as Error;
  for (const name of Object.getOwnPropertyNames(detail)) {
    if (name !== 'message' && name !== 'stack') {
      Object.defineProperty(copy, name, Object.getOwnPropertyDescriptor(detail, name)!);
    }
  }
  Object.defineProperty(copy, 'message', { value: oneLine(message), writable: true, configurable: true });
  if (typeof stack === 'string') {
    Object.defineProperty(copy, 'stack', { value: inertLines(stack), writable: true, configurable: true });
  }
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
