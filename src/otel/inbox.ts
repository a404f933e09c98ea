/** The inbox gauges: every inbox observed, its entries by state and its oldest due entry, read once per collection. */
import type { Meter, ObservableGauge } from '@opentelemetry/api';
import type { InboxStats, InboxStore } from '../core/inbox.js';

/** The inbox gauges of one meter; their callback is registered with the first inbox observed. */
export class InboxGauges {
  private readonly inboxes = new Map<string, InboxStore>();
  private readonly entries: ObservableGauge;
  private readonly oldestDue: ObservableGauge;
  private observing = false;

  constructor(private readonly meter: Meter) {
    this.entries = meter.createObservableGauge('onceonly.inbox.entries', {
      description: "Entries in a receiver's inbox by state",
      unit: '{entry}',
    });
    this.oldestDue = meter.createObservableGauge('onceonly.inbox.oldest_due.age', {
      description: 'Age of the oldest inbox entry that is due and not yet taken (0 when none)',
      unit: 's',
    });
  }

  /** Observes `inbox` as `receiver`'s (the one observed last, for a receiver observed twice). */
  observe(inbox: InboxStore, receiver: string): void {
    this.inboxes.set(receiver, inbox);
    this.observeAll();
  }

  private observeAll(): void {
    if (this.observing) return;
    this.observing = true;
    const { inboxes, entries, oldestDue } = this;
    this.meter.addBatchObservableCallback(
      async (result) => {
        const reads = [...inboxes].map(async ([receiver, inbox]) => {
          let stats: InboxStats;
          try {
            stats = await inbox.stats({ receiver });
          } catch {
            return; // the store is away: no point rather than a wrong one
          }
          for (const state of ['pending', 'processing', 'completed', 'dead'] as const) {
            result.observe(entries, stats[state], {
              'onceonly.receiver': receiver,
              'onceonly.inbox.state': state,
            });
          }
          result.observe(oldestDue, stats.oldestDueMs / 1000, { 'onceonly.receiver': receiver });
        });
        await Promise.all(reads);
      },
      [entries, oldestDue],
    );
  }
}
