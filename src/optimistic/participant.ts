/**
 * Who takes part in a round: every call of `optimisticUpdate` is a participant with its own promise
 * and the options it was called with, checked (its {@link Settings}). The coalescing queue
 * (`coalescing.ts`) groups participants into rounds, the round (`round.ts`) and its passes
 * (`mutations.ts`) settle them; all three only read this file, so none of them imports another
 * back.
 *
 * A participant settles exactly once: with its own outcome when the round ends, with its own error
 * when its `mutate` throws, or with its signal's reason the moment its signal aborts.
 */
import type { Scope } from "../observability/scope.js";
import type { BackoffStrategy } from "../retry/index.js";
import type { Mutation, OptimisticConflictEvent, OptimisticUpdateResult } from "./types.js";

/** The options of a round, checked. */
export interface Settings {
  readonly abortSignal: AbortSignal | undefined;
  readonly maxAttempts: number;
  readonly backoff: BackoffStrategy;
  readonly skipReadAfterOwnWrite: boolean;
  readonly coalesce: boolean;
  readonly onConflict: ((event: OptimisticConflictEvent) => void) | undefined;
  readonly recoveryTimeoutInMs: number;
  /** The call's span and metrics, when OpenTelemetry records (`src/observability`). */
  readonly observation: Scope | undefined;
}

/** One call of `optimisticUpdate`, waiting for its outcome. */
export interface Participant<T> {
  readonly mutate: Mutation<T>;
  readonly abortSignal: AbortSignal | undefined;
  readonly settings: Settings;
  /** True once it resolved or rejected; a settled participant takes no further part in any round. */
  settled: boolean;
  succeed(result: OptimisticUpdateResult<T>): void;
  fail(error: unknown): void;
}

/** Makes the participant for one call, and the promise its caller awaits. */
export function join<T>(mutate: Mutation<T>, settings: Settings) {
  const { abortSignal } = settings;
  let resolve!: (result: OptimisticUpdateResult<T>) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<OptimisticUpdateResult<T>>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const onAbort = () => participant.fail(abortSignal!.reason);
  const finish = () => {
    participant.settled = true;
    abortSignal?.removeEventListener("abort", onAbort);
  };
  const participant: Participant<T> = {
    mutate,
    abortSignal,
    settings,
    settled: false,
    succeed(result) {
      if (participant.settled) return;
      finish();
      resolve(result);
    },
    fail(error) {
      if (participant.settled) return;
      finish();
      reject(error);
    },
  };
  abortSignal?.addEventListener("abort", onAbort, { once: true });
  return { participant, promise };
}
