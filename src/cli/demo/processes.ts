/**
 * The demo's processes: web processes (and inbox worker processes) forked from the primary, one
 * kill at a time granted while every process is up, and each killed process restarted as a process
 * manager would.
 */
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { assignPort, until } from '../wait.js';
import type { DemoMode, DemoRole, WorkerConfig } from '../worker.js';

/** The processes of one demo run, from their start to their stop. */
export class DemoProcesses {
  private readonly roles = new Map<number, DemoRole>();
  // With kills on, one process is sure to be killed, so a short run cannot pass without its chaos
  // (the other kills are random): the first inbox worker process at its first run (inbox and hybrid
  // modes), the first web process at its tenth in inline mode. Not at its first there: a web process
  // killed while the sender's first connections queue on it left a run where nearly every delivery
  // dropped. A kill the primary refuses (another process down) is asked for again at the next run.
  private firstKill: boolean;
  /** The port is picked when the web processes are ready to listen, and handed to them (and to restarts). */
  private readonly ports: ReturnType<typeof assignPort>;
  private stopping = false;
  /** Processes killed by the chaos (SIGKILL), each restarted. */
  killed = 0;
  /** Why the run cannot go on: a process that died during its start-up. */
  startupFailure: string | undefined;
  /** Ctrl-C: the run ends as a failed start-up ends it. */
  interrupted = false;
  /** Aborted on a start-up failure or Ctrl-C: the simulator stops sending. */
  readonly aborted = new AbortController();
  private readonly listening = new Set<number>();
  private readonly ready = new Set<number>();
  // A process kills itself only when the primary grants it (see worker.ts): one kill at a time, and
  // only while every process is up. The chaos is handlers dying mid-work, not the service down: with
  // every web process dead at once the primary stops listening, and a sender that never retries
  // loses the deliveries of those seconds to refused connections (on a loaded host, where restarts
  // are slow, nearly a whole run), none of them having reached a handler.
  private kill: { id: number; exited: boolean } | undefined;

  constructor(
    private readonly config: WorkerConfig,
    private readonly mode: DemoMode,
    private readonly workers: number,
    private readonly inboxWorkers: number,
  ) {
    const workerFile = fileURLToPath(
      new URL(`../worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
    );
    cluster.setupPrimary({ exec: workerFile, silent: false });
    this.firstKill = config.killRate > 0;
    this.ports = assignPort(cluster, workers);
    cluster.on('listening', this.onListening);
    cluster.on('message', this.onMessage);
    cluster.on('exit', this.onExit);
  }

  /** The port the web processes listen on, once they all started. */
  get port(): number {
    return this.ports.port!;
  }

  /** Forks every process: the web processes, then the inbox worker processes. */
  start(webRole: DemoRole): void {
    for (let i = 0; i < this.workers; i++) this.fork(webRole);
    for (let i = 0; i < this.inboxWorkers; i++) this.fork('worker');
  }

  /** Waits for every process to be ready; throws on a start-up failure (the interruption's own error). */
  async started(interruption: () => Error): Promise<void> {
    await until(
      () =>
        (this.listening.size >= this.workers && this.ready.size >= this.workers + this.inboxWorkers) ||
        this.startupFailure !== undefined ||
        this.interrupted,
      60_000,
      'onceonly demo: workers did not start',
    );
    if (this.startupFailure) throw new Error(this.startupFailure);
    if (this.interrupted) throw interruption();
  }

  /** Ctrl-C: no process is restarted, and the simulator stops. */
  interrupt(): void {
    this.interrupted = true;
    this.stopping = true;
    this.aborted.abort();
  }

  /** Stops every process (none restarted) and the primary's listeners. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.ports.detach();
    // Every acknowledged effect is committed to the ledger; stop the workers without ceremony.
    // A worker that already exited stays in cluster.workers until its IPC channel closes too, and
    // emits no second 'exit': wait only for the live ones.
    await Promise.all(
      this.live().map((w) => {
        const exited = new Promise<void>((resolve) => w!.process.once('exit', () => resolve()));
        w!.process.kill('SIGKILL');
        return exited;
      }),
    );
    cluster.off('listening', this.onListening);
    cluster.off('message', this.onMessage);
    cluster.off('exit', this.onExit);
  }

  private fork(role: DemoRole): void {
    const killAt = !this.firstKill ? 0 : role === 'worker' ? 1 : this.mode === 'inline' ? 10 : 0;
    if (killAt > 0) this.firstKill = false;
    const w = cluster.fork({
      ONCEONLY_DEMO_WORKER: JSON.stringify(this.config),
      ONCEONLY_DEMO_ROLE: role,
      ONCEONLY_DEMO_KILL_AT: String(killAt),
    });
    this.roles.set(w.id, role);
  }

  private live() {
    return Object.values(cluster.workers ?? {}).filter((w) => w !== undefined && !w.isDead());
  }

  private allUp(): boolean {
    return this.live().filter((w) => this.ready.has(w!.id)).length >= this.workers + this.inboxWorkers;
  }

  private markReady(id: number): void {
    this.ready.add(id);
    if (this.kill?.exited && this.allUp()) this.kill = undefined;
  }

  private readonly onListening = (w: { id: number }) => {
    this.listening.add(w.id);
    this.markReady(w.id);
  };

  private readonly onMessage = (w: Worker, message: unknown) => {
    const m = message as { onceonlyWorking?: unknown; onceonlyMayKill?: unknown } | null;
    // An inbox worker process listens on nothing: it says when its worker runs.
    if (m?.onceonlyWorking === true) this.markReady(w.id);
    if (typeof m?.onceonlyMayKill === 'number') {
      const granted = this.kill === undefined && !this.stopping && this.allUp();
      if (granted) this.kill = { id: w.id, exited: false };
      // The asking process may be gone already (another of its handlers was granted a kill): the
      // answer then has no one to reach, and must not end the primary with an EPIPE.
      if (w.isConnected())
        w.send({ onceonlyKill: { ask: m.onceonlyMayKill, granted } }, undefined, {}, () => {});
    }
  };

  private readonly onExit = (w: { id: number }, code: number | null, signal: string | null) => {
    this.listening.delete(w.id);
    if (this.kill?.id === w.id) this.kill.exited = true;
    if (this.stopping) return;
    // SIGKILL is the chaos: a restarted worker can be handed queued connections, and killed by one,
    // before the primary hears it listen. Any other death before it was ready would repeat: stop.
    if (signal === 'SIGKILL') this.killed++;
    else if (!this.ready.has(w.id)) {
      this.startupFailure = `a worker exited during start-up (${signal ?? `code ${code}`}); see its error above`;
      this.aborted.abort();
      return;
    }
    this.fork(this.roles.get(w.id) ?? 'web'); // restart, as a process manager would
  };
}
