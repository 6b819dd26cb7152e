/**
 * A small typed event hub: `on(event, listener)` returns a disposable (cockatiel's habit), so a
 * listener can be removed with `dispose()` or `using`. A listener that throws is logged and never
 * breaks the consumer.
 */
import { describeError } from "../internal/describe-error.js";
import { logger } from "../internal/logger.js";
import { noteConsumerEvent } from "./telemetry.js";

/** Removes the listener it was returned for. */
export interface ListenerDisposable extends Disposable {
  /** Removes the listener; calling it again does nothing. */
  dispose(): void;
}

type Listener<P> = (payload: P) => void;

export class TypedEvents<E extends object> {
  readonly #listeners = new Map<keyof E, Set<Listener<never>>>();

  on<K extends keyof E>(event: K, listener: (payload: E[K]) => void): ListenerDisposable {
    if (typeof listener !== "function") throw new TypeError("`listener` must be a function.");
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    const dispose = () => void set.delete(listener);
    return { dispose, [Symbol.dispose]: dispose };
  }

  has(event: keyof E): boolean {
    return (this.#listeners.get(event)?.size ?? 0) > 0;
  }

  emit<K extends keyof E>(event: K, payload: E[K]): void {
    const set = this.#listeners.get(event);
    // The listeners of this moment (a listener may subscribe or unsubscribe others while it runs),
    // with no copy for the common cases of none or one.
    if (set?.size === 1) this.#call(event, set.values().next().value!, payload);
    else if (set !== undefined && set.size > 1) for (const listener of [...set]) this.#call(event, listener, payload);
    noteConsumerEvent(String(event), payload); // telemetry after the application has heard it
  }

  #call<K extends keyof E>(event: K, listener: Listener<never>, payload: E[K]): void {
    try {
      (listener as Listener<E[K]>)(payload);
    } catch (error) {
      logger.warning(`A '${String(event)}' listener threw: ${describeError(error)}`);
    }
  }
}
