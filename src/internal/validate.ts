/**
 * Option checks shared by every module: bad options throw `TypeError` (wrong type) or `RangeError`
 * (wrong value) with a message that names the option in backticks and says what is allowed.
 */

/** Checks that `value` is a finite number in `[min, max]` (and whole, if asked); returns it. */
export function checkNumber(
  name: string,
  value: unknown,
  { min = -Infinity, max = Infinity, integer = false, allowInfinity = false } = {},
): number {
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new TypeError(`\`${name}\` must be a number, got ${describeValue(value)}.`);
  }
  if (value === Infinity && allowInfinity) return value;
  if (!Number.isFinite(value)) throw new RangeError(`\`${name}\` must be finite, got ${value}.`);
  if (integer && !Number.isInteger(value)) throw new RangeError(`\`${name}\` must be a whole number, got ${value}.`);
  if (value < min || value > max) {
    const range =
      max === Infinity ? `at least ${min}` : min === -Infinity ? `at most ${max}` : `between ${min} and ${max}`;
    throw new RangeError(`\`${name}\` must be ${range}, got ${value}.`);
  }
  return value;
}

/** Like {@link checkNumber}, but `undefined` gives `fallback`. */
export function optionalNumber(
  name: string,
  value: unknown,
  fallback: number,
  limits: Parameters<typeof checkNumber>[2] = {},
): number {
  return value === undefined ? fallback : checkNumber(name, value, limits);
}

/** Checks that `value` is a function when given. */
export function checkOptionalFunction(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== "function") {
    throw new TypeError(`\`${name}\` must be a function, got ${describeValue(value)}.`);
  }
}

/** Checks that `value` is an AbortSignal when given (duck-typed, so signals from any realm work). */
export function checkOptionalSignal(name: string, value: unknown): void {
  if (value === undefined) return;
  if (
    typeof value !== "object" ||
    value === null ||
    !("aborted" in value) ||
    typeof value.aborted !== "boolean" ||
    !("addEventListener" in value) ||
    typeof value.addEventListener !== "function"
  ) {
    throw new TypeError(`\`${name}\` must be an AbortSignal, got ${describeValue(value)}.`);
  }
}

/**
 * Checks that `value`, when given, is an object with the method `method` (duck-typed, so that
 * objects from two copies of the package pass): `what` names what was expected, e.g. "an AdaptiveRateLimiter".
 */
export function checkOptionalInstance(name: string, value: unknown, method: string, what: string): void {
  if (value === undefined) return;
  if (typeof value !== "object" || value === null || typeof (value as Record<string, unknown>)[method] !== "function") {
    throw new TypeError(`\`${name}\` must be ${what}, got ${describeValue(value)}.`);
  }
}

/** Checks that `value` is a non-empty string. */
export function checkNonEmptyString(name: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new TypeError(`\`${name}\` must be a non-empty string, got ${describeValue(value)}.`);
  }
  return value;
}

/** A wrong option value in words, for error messages: `"abc"`, `number NaN`, `an object`, `a function`. */
export function describeValue(value: unknown): string {
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
