import { isTableEntityTooLargeError } from "../../../src/optimistic/index.js";
import { isTableKeyError } from "../../../src/tables/index.js";
// The typed `expect` (the global one of @types/jest declares asymmetric matchers as `any`).
import { expect } from "@jest/globals";
import {
  checkEntity,
  checkTableKey,
  estimateEntitySizeInBytes,
  MAX_ENTITY_SIZE_IN_BYTES,
} from "../../../src/optimistic/table-entity-rules.js";

describe("table keys", () => {
  it.each([
    ["a/b", '"/"'],
    ["a\\b", '"\\"'],
    ["a#b", '"#"'],
    ["a?b", '"?"'],
    ["tab\there", "control character U+0009"],
    ["nul\u0000", "control character U+0000"],
    ["del\u007f", "control character U+007F"],
    ["c1\u0085", "control character U+0085"],
    ["c1\u009f", "control character U+009F"],
  ])("refuses %j, naming %s", (key, shown) => {
    let error: unknown;
    try {
      checkTableKey("rowKey", key);
    } catch (e) {
      error = e;
    }
    expect(isTableKeyError(error)).toBe(true);
    expect(error).toMatchObject({ code: "InvalidTableKey", keyName: "rowKey", rule: "forbidden-character" });
    expect((error as Error).message).toContain(`contains ${shown}`);
  });

  it("accepts other characters, and refuses non-strings and keys over 1 KiB (512 UTF-16 code units)", () => {
    for (const key of ["", "plain", "with space", "ünïcødé", "a|b~c", "2024-01-01T00:00:00Z", "\u00a0"]) {
      expect(checkTableKey("partitionKey", key)).toBe(key);
    }
    expect(() => checkTableKey("partitionKey", 42)).toThrow(/must be a string/);
    expect(checkTableKey("partitionKey", "x".repeat(512))).toHaveLength(512);
    expect(() => checkTableKey("partitionKey", "x".repeat(513))).toThrow(/at most 512 \(1 KiB\)/);
  });
});

describe("entity size, by the service's rule", () => {
  it("counts 4 + keys + per property 8 + name + value", () => {
    // 4 + (1 + 1) * 2 = 8; "name": 8 + 8 + ("Ada" 6 + 4) = 26; "n": 8 + 2 + 8 = 18; "ok": 8 + 4 + 1 = 13
    expect(estimateEntitySizeInBytes("p", "r", { name: "Ada", n: 7, ok: true })).toBe(8 + 26 + 18 + 13);
    // Binary: length + 4; Guid 16; Int32 4; null is not stored
    expect(
      estimateEntitySizeInBytes("", "", {
        b: new Uint8Array(10),
        g: { value: "x", type: "Guid" },
        i: { value: 1, type: "Int32" },
        z: null,
      }),
    ).toBe(4 + (8 + 2 + 14) + (8 + 2 + 16) + (8 + 2 + 4));
  });

  it("refuses an entity over 1 MiB, a value over 64 KiB, too many properties, unsupported types", () => {
    const big: Record<string, string> = {};
    for (let i = 0; i < 20; i++) big[`p${i}`] = "x".repeat(30_000); // 20 * 60 KB = 1.2 MB
    expect(() => checkEntity("p", "r", big)).toThrow(expect.objectContaining({ code: "EntityTooLarge" }));
    const error = (() => {
      try {
        checkEntity("p", "r", big);
      } catch (e) {
        return e;
      }
    })();
    expect(isTableEntityTooLargeError(error)).toBe(true);
    expect((error as { sizeInBytes: number }).sizeInBytes).toBeGreaterThan(MAX_ENTITY_SIZE_IN_BYTES);

    expect(() => checkEntity("p", "r", { s: "x".repeat(32 * 1024 + 1) })).toThrow(
      expect.objectContaining({ code: "PropertyValueTooLarge" }),
    );
    expect(() => checkEntity("p", "r", { b: new Uint8Array(64 * 1024 + 1) })).toThrow(
      expect.objectContaining({ code: "PropertyValueTooLarge" }),
    );
    const many = Object.fromEntries(Array.from({ length: 253 }, (_, i) => [`p${i}`, i]));
    expect(() => checkEntity("p", "r", many)).toThrow(expect.objectContaining({ code: "TooManyProperties" }));
    expect(() => checkEntity("p", "r", { nested: { a: 1 } })).toThrow(TypeError);
    expect(() => checkEntity("p", "r", { list: [1, 2] })).toThrow(/an array/);
    // just under the limit passes; a reserve pushes it over
    const fits = { s: "x".repeat(1000) };
    expect(() => checkEntity("p", "r", fits)).not.toThrow();
    expect(() => checkEntity("p", "r", fits, { reserveInBytes: MAX_ENTITY_SIZE_IN_BYTES })).toThrow(
      /reserved for the write history/,
    );
  });
});
