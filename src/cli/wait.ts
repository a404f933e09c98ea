/** Small process helpers shared by the demo and the fault suite's fleet. */
import { createServer } from 'node:net';

/** A TCP port free on loopback right now (the kernel's pick). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Polls `test` every `everyMs` until it holds; throws `<what> within <s> s` after `ms`. */
export async function until(test: () => boolean, ms: number, what: string, everyMs = 50): Promise<void> {
  const end = Date.now() + ms;
  while (!test()) {
    if (Date.now() > end) throw new Error(`${what} within ${ms / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
