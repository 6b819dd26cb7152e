/**
 * What `acquire` keeps of the failures it meets while it waits, so that waiting never fails
 * silently: a transient failure is logged (the first of a run at warning level, the rest verbose)
 * and kept as the `cause` of a `LockTimeoutError`; when no request has had any answer from the
 * service for the lock's `unreachableTimeoutInMs` (an unknown host, a refused or hung connection),
 * the wait ends with a `StorageRequestError` instead of going on for ever.
 */
import { StorageRequestError, statusOf } from "../errors.js";
import { logger } from "../internal/logger.js";
import { classifyError } from "../retry/index.js";
import { describeError } from "../internal/describe-error.js";

/** The failures of one `acquire` wait; see the module's description. */
export class WaitFailures {
  readonly #description: string;
  readonly #unreachableTimeoutInMs: number;
  #lastAnswerAt = performance.now();
  #inARow = 0;
  /** The latest transient failure of the wait, if there was one. */
  last: unknown;

  constructor(description: string, unreachableTimeoutInMs: number) {
    this.#description = description;
    this.#unreachableTimeoutInMs = unreachableTimeoutInMs;
  }

  /** The service answered (whatever it said). */
  answered(): void {
    this.#lastAnswerAt = performance.now();
    this.#inARow = 0;
  }

  /** How many looks in a row failed, up to now. */
  get inARow(): number {
    return this.#inARow;
  }

  /**
   * Records a transient failure of `step` (phrased to follow "while"); throws once no request has
   * been answered for longer than the unreachable limit.
   */
  transient(step: string, error: unknown): void {
    this.last = error;
    this.#inARow += 1;
    const status = statusOf(error);
    if (status !== undefined) this.#lastAnswerAt = performance.now(); // a 503 is an answer: the service is there
    const what = describeFailure(error);
    const line = `waiting for the lock on ${this.#description}: ${step} failed transiently (${what}); still waiting`;
    if (this.#inARow === 1) logger.warning(line);
    else logger.verbose(line);
    const silentForMs = performance.now() - this.#lastAnswerAt;
    if (status === undefined && silentForMs >= this.#unreachableTimeoutInMs) {
      throw new StorageRequestError(
        `Could not take the lock on ${this.#description}: no request got any answer from the service for ` +
          `${Math.round(silentForMs)} ms (the last: ${what}). Check the endpoint and the network: the wait ends here ` +
          "instead of going on for ever (`unreachableTimeoutInMs`).",
        { code: "StorageRequestFailed", serviceCode: classifyError(error).serviceCode, transient: true, cause: error },
      );
    }
  }
}

/** A failure in a few words for a log line: `503 ServerBusy`, `network ECONNREFUSED`, … */
export function describeFailure(error: unknown): string {
  const { kind, statusCode, serviceCode } = classifyError(error);
  if (kind === "other") return describeError(error);
  return [statusCode ?? kind, serviceCode].filter((part) => part !== undefined).join(" ");
}
