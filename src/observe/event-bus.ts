import type { Logger } from 'pino';
import type { DaemonEventMap, DaemonEventName } from './events.ts';
import { silentLogger } from './logger.ts';

/** One emitted event, numbered in emit order (`seq` starts at 1 and never repeats in a process). */
export interface BusEvent<K extends DaemonEventName = DaemonEventName> {
  readonly seq: number;
  readonly name: K;
  readonly payload: DaemonEventMap[K];
  /** ISO time of the emit. */
  readonly at: string;
}

/** Any event of the map, discriminated by `name`. */
export type AnyBusEvent = { [K in DaemonEventName]: BusEvent<K> }[DaemonEventName];

/** A listener of every event. */
export type BusListener = (event: AnyBusEvent) => void;

/** A listener of one event name: gets the payload and the whole event. */
export type BusHandler<K extends DaemonEventName> = (
  payload: DaemonEventMap[K],
  event: BusEvent<K>,
) => void;

/** Options of an {@link EventBus}. */
export interface EventBusOptions {
  /** Where a failing listener is reported; defaults to a silent logger. */
  readonly logger?: Logger;
  /** How many recent events are kept for replay (`Last-Event-ID`); defaults to 200, 0 keeps none. */
  readonly historySize?: number;
  /** Applied to every payload before it is kept or delivered (secrets out of events). */
  readonly redact?: <T>(value: T) => T;
}

/** Default number of events kept for replay. */
export const DEFAULT_HISTORY_SIZE = 200;

/**
 * A small synchronous, typed event bus with a ring buffer of recent events. A listener that
 * throws is logged and never disturbs the emitter or the other listeners; events emitted from
 * inside a listener are delivered after the current one, so every listener sees `seq` order.
 */
export class EventBus {
  readonly #logger: Logger;
  readonly #history: (AnyBusEvent | undefined)[];
  #historyNext = 0;
  readonly #redact: (<T>(value: T) => T) | undefined;
  #seq = 0;
  // Replaced, never mutated, so an emit in progress iterates a stable snapshot.
  #listeners: readonly BusListener[] = [];
  readonly #handlers = new Map<DaemonEventName, Map<BusHandler<never>, BusListener>>();
  #delivering = false;
  readonly #pending: AnyBusEvent[] = [];

  /**
   * @param options logger for listener failures; `historySize` (default 200) events kept for replay.
   */
  constructor(options: EventBusOptions = {}) {
    this.#logger = options.logger ?? silentLogger();
    this.#redact = options.redact;
    const size = options.historySize ?? DEFAULT_HISTORY_SIZE;
    if (!Number.isInteger(size) || size < 0)
      throw new RangeError(`historySize must be a non-negative integer, got ${String(size)}`);
    this.#history = new Array<AnyBusEvent | undefined>(size).fill(undefined);
  }

  /** Sequence number of the last emitted event; 0 before the first. */
  get lastSeq(): number {
    return this.#seq;
  }

  /** Number of listeners currently subscribed (including `on` handlers). */
  get listenerCount(): number {
    return this.#listeners.length;
  }

  /**
   * Emit an event to every listener, synchronously.
   * @param name event name from {@link DaemonEventMap}.
   * @param payload the event's payload; listeners must treat it as read-only.
   */
  emit<K extends DaemonEventName>(name: K, payload: DaemonEventMap[K]): void {
    this.#seq += 1;
    if (this.#listeners.length === 0 && this.#history.length === 0) return;
    const safe = this.#redact === undefined ? payload : this.#redact(payload);
    const event = {
      seq: this.#seq,
      name,
      payload: safe,
      at: new Date().toISOString(),
    } as AnyBusEvent;
    if (this.#history.length > 0) {
      this.#history[this.#historyNext] = event;
      this.#historyNext = (this.#historyNext + 1) % this.#history.length;
    }
    if (this.#listeners.length === 0) return;
    this.#pending.push(event);
    if (this.#delivering) return;
    this.#delivering = true;
    try {
      for (let next = this.#pending.shift(); next !== undefined; next = this.#pending.shift()) {
        this.#deliver(next);
      }
    } finally {
      this.#delivering = false;
    }
  }

  /**
   * Listen to every event.
   * @param listener called synchronously with each event, in `seq` order.
   * @returns a function that unsubscribes the listener.
   */
  subscribe(listener: BusListener): () => void {
    this.#listeners = [...this.#listeners, listener];
    return () => {
      this.#listeners = this.#listeners.filter((l) => l !== listener);
    };
  }

  /**
   * Listen to one event name.
   * @param name the event to listen to.
   * @param handler called with the payload and the whole event.
   * @returns a function that removes the handler, same as {@link EventBus.off}.
   */
  on<K extends DaemonEventName>(name: K, handler: BusHandler<K>): () => void {
    this.off(name, handler);
    const listener: BusListener = (event) => {
      if (event.name === name) handler(event.payload as DaemonEventMap[K], event as BusEvent<K>);
    };
    let byHandler = this.#handlers.get(name);
    if (byHandler === undefined) this.#handlers.set(name, (byHandler = new Map()));
    byHandler.set(handler as unknown as BusHandler<never>, listener);
    this.#listeners = [...this.#listeners, listener];
    return () => this.off(name, handler);
  }

  /**
   * Remove a handler added with {@link EventBus.on}; unknown handlers are ignored.
   * @param name the event name the handler was added for.
   * @param handler the handler to remove.
   */
  off<K extends DaemonEventName>(name: K, handler: BusHandler<K>): void {
    const byHandler = this.#handlers.get(name);
    const key = handler as unknown as BusHandler<never>;
    const listener = byHandler?.get(key);
    if (byHandler === undefined || listener === undefined) return;
    byHandler.delete(key);
    this.#listeners = this.#listeners.filter((l) => l !== listener);
  }

  /**
   * Recent events with a `seq` greater than `afterSeq`, oldest first, from the ring buffer.
   * @param afterSeq the last sequence number the caller has seen.
   * @returns the buffered events after it, and `complete: false` when older ones were already dropped.
   */
  since(afterSeq: number): { events: AnyBusEvent[]; complete: boolean } {
    const events: AnyBusEvent[] = [];
    const size = this.#history.length;
    for (let i = 0; i < size; i += 1) {
      const event = this.#history[(this.#historyNext + i) % size];
      if (event !== undefined && event.seq > afterSeq) events.push(event);
    }
    const oldest = events[0]?.seq ?? this.#seq + 1;
    return { events, complete: oldest <= afterSeq + 1 };
  }

  #deliver(event: AnyBusEvent): void {
    for (const listener of this.#listeners) {
      try {
        const returned: unknown = listener(event);
        if (returned instanceof Promise) {
          returned.catch((err: unknown) => this.#report(err, event));
        }
      } catch (err) {
        this.#report(err, event);
      }
    }
  }

  #report(err: unknown, event: AnyBusEvent): void {
    this.#logger.error({ err, event: event.name, seq: event.seq }, 'event listener failed');
  }
}
