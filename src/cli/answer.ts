/** An answer's body, bounded: what `send` and `simulate` read of a receiver's answer. */

/** The most of an answer's body read: a receiver's answer is short; a stream never ends. */
export const ANSWER_BYTES = 64 * 1024;

/** The answer's body as text, at most ANSWER_BYTES of it (the rest is not read); '' if it fails. */
export async function answerText(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < ANSWER_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // A body cut short (the timeout, a dropped connection): what arrived is shown.
  } finally {
    reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes.subarray(0, ANSWER_BYTES));
}
