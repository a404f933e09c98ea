/**
 * One exchange with a sender (a key fetch, AWS SNS's subscription confirmation), bounded in time and
 * in size: a deadline over headers and body together, and at most 64 KiB read from the answer.
 */
import { VerificationError } from '../../errors.js';

/** The most bytes read from a sender's answer. */
export const MAX_BYTES = 64 * 1024;

/**
 * Runs one exchange with a sender (a key fetch, AWS SNS's subscription confirmation) within
 * `timeoutMs`, headers and body together, without relying on the `fetch` honouring its abort
 * signal: past the deadline the signal is aborted and `fail` names the timeout. Any other error
 * that is not already a `VerificationError` is turned into `fail`'s error too, so the caller sees
 * only `VerificationError`s.
 */
export async function withinDeadline<T>(
  run: (signal: AbortSignal) => Promise<T>,
  timeoutMs: number,
  fail: (why: string, cause?: unknown) => VerificationError,
): Promise<T> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(fail(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    (timer as { unref?: () => void }).unref?.();
  });
  try {
    return await Promise.race([run(controller.signal), deadline]);
  } catch (error) {
    if (error instanceof VerificationError) throw error;
    throw fail(error instanceof Error ? error.message : String(error), error);
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/**
 * A key server's answer as text, read from its body stream and refused once past 64 KiB, so a huge
 * or endless answer costs at most that much memory. A response without a stream (a test double)
 * is read with `text()` and checked after.
 */
export async function readBounded(
  response: { body?: ReadableStream<Uint8Array> | null | undefined; text?(): Promise<string> },
  signal: AbortSignal,
): Promise<string> {
  if (!response.body) {
    const text = (await response.text?.()) ?? '';
    if (text.length > MAX_BYTES) throw new Error(`the key document is over ${MAX_BYTES} bytes`);
    return text;
  }
  return new TextDecoder('utf-8', { fatal: true }).decode(await readBoundedBytes(response.body, signal));
}

/** A body stream's bytes, refused once past 64 KiB (the rest never pulled). @internal */
export async function readBoundedBytes(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
): Promise<Buffer> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      if (signal.aborted) throw new Error('aborted');
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > MAX_BYTES) throw new Error(`the key document is over ${MAX_BYTES} bytes`);
      chunks.push(value);
    }
  } finally {
    // Past the bound (or on any failure) the rest is never pulled: the stream is cancelled.
    if (total > MAX_BYTES || signal.aborted) await reader.cancel().catch(() => {});
    reader.releaseLock?.();
  }
  return Buffer.concat(chunks);
}
