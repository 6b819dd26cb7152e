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
    throw new TypeError(`\`${name}\` must be a number, got ${describe(value)}.`);
  }
  if (value === Infinity && allowInfinity) return value;
  if (!Number.isFinite(value)) throw new RangeError(`\`${name}\` must be finite, got ${value}.`);
  if (integer && !Number.isInteger(value)) throw new RangeError(`\`${name}\` must be a whole number, got ${value}.`);
  if (value < min || value > max) {
    const range = max === Infinity ? `at least ${min}` : min === -Infinity ? `at most ${max}` : `between ${min} and ${max}`;
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
    throw new TypeError(`\`${name}\` must be a function, got ${describe(value)}.`);
  }
}

/** Checks that `value` is an AbortSignal when given (duck-typed, so signals from any realm work). */
export function checkOptionalSignal(name: string, value: unknown): void {
  if (value === undefined) return;
  const signal = value as Partial<AbortSignal> | null;
  if (
    typeof signal !== "object" ||
    signal === null ||
    typeof signal.aborted !== "boolean" ||
    typeof signal.addEventListener !== "function"
  ) {
    throw new TypeError(`\`${name}\` must be an AbortSignal, got ${describe(value)}.`);
  }
}

/** Checks that `value` is a non-empty string. */
export function checkNonEmptyString(name: string, value: unknown): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new TypeError(`\`${name}\` must be a non-empty string, got ${describe(value)}.`);
  }
  return value;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "object") return Array.isArray(value) ? "an array" : "an object";
  return `${typeof value} ${String(value)}`;
}
