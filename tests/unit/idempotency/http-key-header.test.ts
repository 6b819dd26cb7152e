/**
 * The `Idempotency-Key` header as draft-ietf-httpapi-idempotency-key-header-06 section 2.1 defines
 * it (an RFC 8941 String), and the unquoted token many clients send.
 */
import { parseIdempotencyKey } from "../../../src/idempotency/http-key-header.js";

describe("parseIdempotencyKey", () => {
  it.each([
    ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', "8e03978e-40d5-43e8-bc93-6894a57f9324"],
    ['"with \\"quotes\\" and \\\\"', 'with "quotes" and \\'],
    ['"a, b; c"', "a, b; c"],
    ["8e03978e-40d5-43e8", "8e03978e-40d5-43e8"],
    ["  padded  ", "padded"],
    [["only-one"], "only-one"],
  ])("reads %j as the key %j", (header, key) => {
    expect(parseIdempotencyKey(header)).toEqual({ kind: "key", key });
  });

  it.each([undefined, null, []])("finds no key in %j", (header) => {
    expect(parseIdempotencyKey(header as string | undefined)).toEqual({ kind: "missing" });
  });

  it.each([
    ["", /empty/],
    ['""', /empty/],
    ['"a", "b"', /more than one/],
    [["a", "b"], /several/],
    ['"open', /closing/],
    ['"bad \\n escape"', /escape/],
    ['"tab\there"', /printable ASCII/],
    ["two words", /neither/],
    ["a,b", /neither/],
    ["é", /neither/],
  ])("refuses %j", (header, why) => {
    const parsed = parseIdempotencyKey(header);
    expect(parsed.kind).toBe("invalid");
    expect(parsed.kind === "invalid" && parsed.why).toMatch(why);
  });

  it("refuses a key longer than the limit", () => {
    expect(parseIdempotencyKey("x".repeat(255)).kind).toBe("key");
    const tooLong = parseIdempotencyKey("x".repeat(256));
    expect(tooLong.kind === "invalid" && tooLong.why).toMatch(/256/);
    expect(parseIdempotencyKey("abcd", 3).kind).toBe("invalid");
  });
});
