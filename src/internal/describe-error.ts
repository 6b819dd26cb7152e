/**
 * Thrown values as text, for every log line, event, span and poison envelope the library writes.
 *
 * JavaScript lets code throw anything: `null`, a string, a Symbol, a BigInt, an object without a
 * prototype (no `toString`), an object whose `message` or `toString` getter throws, a revoked
 * Proxy (every operation on it throws, `instanceof` included), a circular object. The obvious ways
 * to print one (`String(error)`, `` `${error}` ``, `error.message`, `error instanceof Error`)
 * throw for some of these, and a failure path that throws while describing a failure loses the
 * failure it was reporting (issue 21: a handler throwing `Object.create(null)` made the consumer's
 * failure path throw "Cannot convert object to primitive value", and the message was poisoned
 * later without a reason).
 *
 * {@link describeError} never throws, for any value, and its text is redacted of secrets
 * ({@link redactSecrets}). {@link errorCodeOf} and {@link errorNameOf} read `code` and `name` the
 * same way. Each property is read once, inside a `try`: a getter may throw, or answer differently
 * on a second read.
 */
import { redactSecrets } from "../errors.js";

/** The longest description kept (a thrown object's JSON can be large). */
const MAX_LENGTH = 4_000;

/**
 * A thrown value in words, redacted of secrets; never throws. An error-like value gives its
 * `message` (as `error.message` always did here); a string itself; other values their text, and
 * an object without a usable message or `toString` says so, with its JSON when it has one.
 *
 * @example
 * ```ts
 * import { describeError } from "azure-storage-concurrency/errors";
 *
 * declare function work(): Promise<void>;
 * // Whatever `work` throws (an Error, a string, an object without a prototype), the log line is written.
 * await work().catch((error: unknown) => console.error(`work failed: ${describeError(error)}`));
 * ```
 */
export function describeError(value: unknown): string {
  let text: string;
  try {
    text = describeUnsafe(value);
  } catch {
    text = "a thrown value that cannot be read (every way to print it threw)";
  }
  return redactSecrets(text.length > MAX_LENGTH ? `${text.slice(0, MAX_LENGTH)}…` : text);
}

/** The value's `code` when it is a non-empty string, else its `name` when that is; never throws. */
export function errorCodeOf(value: unknown): string | undefined {
  return stringProperty(value, "code") ?? stringProperty(value, "name");
}

/** The value's `name` when it is a non-empty string (`TypeError`, `AbortError`, ...); never throws. */
export function errorNameOf(value: unknown): string | undefined {
  return stringProperty(value, "name");
}

/** `value[key]` when it is a non-empty string; `undefined` when absent, of another type, or its read throws. */
export function stringProperty(value: unknown, key: string): string | undefined {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return undefined;
  try {
    const property: unknown = (value as Record<string, unknown>)[key];
    return typeof property === "string" && property !== "" ? property : undefined;
  } catch {
    return undefined;
  }
}

function describeUnsafe(value: unknown): string {
  switch (typeof value) {
    case "string":
      return value;
    case "symbol":
      return `${String(value)} (a thrown Symbol)`; // String() of a Symbol works; a template would throw
    case "bigint":
      return `${value.toString()}n (a thrown BigInt)`;
    case "undefined":
    case "number":
    case "boolean":
      return `${String(value)} (a thrown ${typeof value === "undefined" ? "undefined" : typeof value}, not an Error)`;
    case "function":
      return `a thrown function${nameOf(value)}`;
    case "object":
      if (value === null) return "null (a thrown null, not an Error)";
      return describeObject(value);
    default:
      return "a thrown value of an unknown type";
  }
}

function describeObject(value: object): string {
  const message = stringProperty(value, "message");
  if (message !== undefined) return message;
  // No message: its own text, when it has a `toString` that answers something better than "[object Object]".
  const text = ownText(value);
  if (text !== undefined) return text;
  const json = jsonOf(value);
  const name = stringProperty(value, "name");
  return `a thrown ${name ?? "object"} without a message${json === undefined ? "" : `: ${json}`}`;
}

function ownText(value: object): string | undefined {
  try {
    const text = String(value); // eslint-disable-line @typescript-eslint/no-base-to-string -- "[object …]" is checked below
    return text === "" || /^\[object \w+\]$/.test(text) ? undefined : text;
  } catch {
    return undefined; // no prototype (no toString), a throwing toString, a revoked Proxy
  }
}

function jsonOf(value: object): string | undefined {
  try {
    const json = JSON.stringify(value);
    return typeof json === "string" ? json : undefined;
  } catch {
    return undefined; // circular, a BigInt inside, a throwing getter or toJSON, a revoked Proxy
  }
}

function nameOf(fn: unknown): string {
  const name = stringProperty(fn, "name");
  return name === undefined ? "" : ` '${name}'`;
}
