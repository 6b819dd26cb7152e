/**
 * Values code can throw that are not Errors, or are Errors that fight back: what a handler, a
 * mutate or a callback may throw at the library (issue 21). Each made `String(error)`, a template
 * string, `error.message` or `instanceof Error` throw somewhere before.
 */

/** Each hostile value: a label, a maker (a fresh value per call), and what `describeError` says of it. */
export function hostileValues(): [label: string, make: () => unknown, described: RegExp][] {
  const throwing = (key: string) =>
    Object.defineProperty({}, key, {
      get() {
        throw new Error(`${key} getter threw`);
      },
      enumerable: true,
    });
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  };
  const circular = () => {
    const value: Record<string, unknown> = { name: "Loop" };
    value.self = value;
    return value;
  };
  const throwingToString = () => ({
    toString: () => {
      throw new Error("toString threw");
    },
  });
  const errorWithThrowingMessage = () =>
    Object.defineProperty(new Error("hidden"), "message", {
      get: () => {
        throw new Error("message getter threw");
      },
    });
  return [
    ["null", () => null, /^null \(a thrown null/],
    ["undefined", () => undefined, /^undefined \(a thrown undefined/],
    ["a number", () => 42, /^42 \(a thrown number/],
    ["a string", () => "plain words", /^plain words$/],
    ["a Symbol", () => Symbol("odd"), /^Symbol\(odd\) \(a thrown Symbol\)$/],
    ["a BigInt", () => 10n, /^10n \(a thrown BigInt\)$/],
    ["a null-prototype object", () => Object.create(null) as object, /^a thrown object without a message: \{\}$/],
    [
      "a null-prototype object with a message",
      () => Object.assign(Object.create(null) as object, { message: "told" }),
      /^told$/,
    ],
    ["an object whose toString throws", throwingToString, /^a thrown object without a message/],
    ["an object whose message getter throws", () => throwing("message"), /^a thrown object without a message$/],
    ["an object whose name getter throws", () => throwing("name"), /^a thrown object without a message$/],
    ["an object whose code getter throws", () => throwing("code"), /^a thrown object without a message$/],
    ["an object whose stack getter throws", () => throwing("stack"), /^a thrown object without a message$/],
    ["an Error whose message getter throws", errorWithThrowingMessage, /^a thrown Error without a message/],
    ["a revoked Proxy", revoked, /^a thrown object without a message$/],
    ["a circular object", circular, /^a thrown Loop without a message$/],
    ["a function", () => function named() {}, /^a thrown function 'named'$/],
    ["an Error", () => new TypeError("bad thing"), /^bad thing$/],
  ];
}
