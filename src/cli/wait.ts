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

type ClusterLike = Pick<typeof import('node:cluster').default, 'on' | 'off'>;
type WorkerLike = { send(message: unknown): unknown; isDead(): boolean };

/**
 * The primary's side of handing cluster workers their port. A free port is picked only once the
 * first `initial` workers have opened everything and said they are ready, and is sent to them at
 * once, so no other process can take it between the pick and the listen (worker start-up takes a
 * second or two). Workers started later (restarts) get the same port as soon as they are ready.
 */
export function assignPort(
  cluster: ClusterLike,
  initial: number,
): { readonly port: number | undefined; detach(): void } {
  let port: number | undefined;
  let picking = false;
  const waiting: WorkerLike[] = [];
  const onMessage = (worker: WorkerLike, message: unknown) => {
    if ((message as { onceonlyReady?: unknown } | null)?.onceonlyReady !== true) return;
    if (port !== undefined) {
      worker.send({ onceonlyListen: port });
      return;
    }
    waiting.push(worker);
    if (waiting.length < initial || picking) return;
    picking = true;
    void freePort().then((picked) => {
      port = picked;
      for (const w of waiting.splice(0)) if (!w.isDead()) w.send({ onceonlyListen: picked });
    });
  };
  cluster.on('message', onMessage);
  return {
    get port() {
      return port;
    },
    detach: () => cluster.off('message', onMessage),
  };
}

/** The worker's side: says it is ready, and listens on loopback on the port the primary sends. */
export function listenWhenAssigned(server: { listen(port: number, host: string): unknown }): void {
  process.on('message', (message: unknown) => {
    const port = (message as { onceonlyListen?: unknown } | null)?.onceonlyListen;
    if (typeof port === 'number') server.listen(port, '127.0.0.1');
  });
  process.send?.({ onceonlyReady: true });
}
