/** Small process helpers shared by the demo and the fault suite's fleet. */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Whether a TCP port can be listened on on loopback right now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** The first port of the kernel's ephemeral range (outgoing connections and port-0 listeners). */
export function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * A TCP port free on loopback right now, picked at random below the kernel's ephemeral range: an
 * outgoing connection or another port-0 listener cannot take it before it is listened on (only
 * another explicit pick could). Falls back to the kernel's own pick.
 */
export async function freePort(): Promise<number> {
  const low = ephemeralLow();
  for (let tries = 0; low > 11_000 && tries < 50; tries++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (await portFree(port)) return port;
  }
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
  // A worker killed after it said ready needs no port (its restart asks again): a send to it that
  // throws (EPIPE: its channel closed between the check and the send) must not throw out of here.
  const tell = (worker: WorkerLike, listen: number) => {
    if (worker.isDead()) return;
    try {
      worker.send({ onceonlyListen: listen });
    } catch {}
  };
  const onMessage = (worker: WorkerLike, message: unknown) => {
    if ((message as { onceonlyReady?: unknown } | null)?.onceonlyReady !== true) return;
    if (port !== undefined) {
      tell(worker, port);
      return;
    }
    waiting.push(worker);
    if (waiting.length < initial || picking) return;
    picking = true;
    void freePort().then((picked) => {
      port = picked;
      for (const w of waiting.splice(0)) tell(w, picked);
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
