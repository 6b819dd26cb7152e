/**
 * Option checks for the tools' programmatic API (`runPartitionStressTest`), with the library's
 * conventions: a wrong type throws `TypeError`, a wrong value `RangeError`, and the message names
 * the option in backticks and says what is allowed. The library keeps its own checks internal (they
 * are not part of its API); these are the few the tools need.
 */

/** Checks that `value` is a finite number in `[min, max]` (and whole, if asked); returns it. */
export function checkNumber(
  name: string,
  value: unknown,
  { min = -Infinity, max = Infinity, integer = false, allowInfinity = false } = {},
): number {
  if (typeof value !== "number" || Number.isNaN(value))
    throw new TypeError(`\`${name}\` must be a number, got ${shown(value)}.`);
  if (value === Infinity && allowInfinity) return value;
  if (!Number.isFinite(value)) throw new RangeError(`\`${name}\` must be finite, got ${value}.`);
  if (integer && !Number.isInteger(value)) throw new RangeError(`\`${name}\` must be a whole number, got ${value}.`);
  if (value >= min && value <= max) return value;
  const range =
    max === Infinity ? `at least ${min}` : min === -Infinity ? `at most ${max}` : `between ${min} and ${max}`;
  throw new RangeError(`\`${name}\` must be ${range}, got ${value}.`);
}

/** Checks that `value` is a function when given. */
export function checkOptionalFunction(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== "function")
    throw new TypeError(`\`${name}\` must be a function, got ${shown(value)}.`);
}

/** Checks that `value` is an instance of the library's class (`kind` names it) when given. */
export function checkOptionalInstance(name: string, value: unknown, method: string, kind: string): void {
  if (value === undefined) return;
  if (typeof value !== "object" || value === null || typeof (value as Record<string, unknown>)[method] !== "function")
    throw new TypeError(`\`${name}\` must be ${kind}, got ${shown(value)}.`);
}

/** Checks that `value` is an AbortSignal when given (duck-typed, so signals from any realm work). */
export function checkOptionalSignal(name: string, value: unknown): void {
  const signal = value as { aborted?: unknown; addEventListener?: unknown } | null | undefined;
  if (value === undefined) return;
  if (
    typeof value === "object" &&
    typeof signal?.aborted === "boolean" &&
    typeof signal.addEventListener === "function"
  )
    return;
  throw new TypeError(`\`${name}\` must be an AbortSignal, got ${shown(value)}.`);
}

/** A wrong option value in words: `"abc"`, `number NaN`, `an object`, `a function`. */
function shown(value: unknown): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
    case "object":
      return value === null ? "null" : Array.isArray(value) ? "an array" : "an object";
    case "function":
      return "a function";
    case "undefined":
      return "undefined";
    case "symbol":
      return "a symbol";
    default:
      return `${typeof value} ${String(value)}`;
  }
}
