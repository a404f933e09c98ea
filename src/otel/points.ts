/**
 * Counters kept in this process and read by the SDK at collection (observable instruments): a
 * counter bumped per delivery costs a Map look-up instead of the SDK's attribute hashing.
 */
import type { Attributes, Meter } from '@opentelemetry/api';

/** A counter's point: its attribute set and its value, read by the SDK at collection. */
export interface Point {
  readonly attributes: Attributes;
  value: number;
}

/** A counter kept here: the point of one attribute set, by a key the caller builds from its values. */
export interface Tally {
  /** The point of one attribute set (made once, then bumped in place by its holder). */
  point(key: string, attributes: Attributes): Point;
}

/**
 * A counter (or up-down counter) kept in this process and observed by the SDK at collection: its
 * points by a key the caller builds from the attribute values.
 */
export function tally(
  meter: Meter,
  name: string,
  kind: 'counter' | 'updown',
  descriptor: { description: string; unit: string },
): Tally {
  const points = new Map<string, { attributes: Attributes; value: number }>();
  const instrument =
    kind === 'counter'
      ? meter.createObservableCounter(name, descriptor)
      : meter.createObservableUpDownCounter(name, descriptor);
  instrument.addCallback((result) => {
    // A counter's points are made ahead of use (a lease-lost point per receiver): reported once bumped.
    for (const point of points.values()) {
      if (kind === 'updown' || point.value !== 0) result.observe(point.value, point.attributes);
    }
  });
  return {
    /** The point of one attribute set (made once, then bumped in place by its holder). */
    point(key: string, attributes: Attributes): Point {
      let point = points.get(key);
      if (point === undefined) {
        point = { attributes, value: 0 };
        points.set(key, point);
      }
      return point;
    },
  };
}

export type Nested<V> = Map<unknown, V>;

/** The map under `key` in `map`, made when missing. */
export function within<V extends Map<unknown, unknown>>(map: Map<unknown, V>, key: unknown): V {
  let inner = map.get(key);
  if (inner === undefined) {
    inner = new Map() as V;
    map.set(key, inner);
  }
  return inner;
}
