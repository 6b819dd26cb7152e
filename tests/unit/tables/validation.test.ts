import type { TransactionAction } from "@azure/data-tables";
import {
  isTableActionError,
  isTableKeyError,
  MAX_TABLE_KEY_LENGTH,
  planTransactions,
  tableKeyProblem,
  TRANSACTION_LIMITS,
  validateTableKey,
  type TableActionError,
  type TableKeyError,
} from "../../../src/tables/index.js";

const location = { url: "https://account.table.core.windows.net", tableName: "orders" };

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("did not throw");
}

describe("key rules", () => {
  it.each([
    ["a/b", "forbidden-character"],
    ["a\\b", "forbidden-character"],
    ["a#b", "forbidden-character"],
    ["a?b", "forbidden-character"],
    ["a\u0000b", "forbidden-character"],
    ["tab\there", "forbidden-character"],
    ["a\u007fb", "forbidden-character"],
    ["a\u009fb", "forbidden-character"],
    [null, "missing"],
    [undefined, "missing"],
    [42, "not-a-string"],
    ["x".repeat(MAX_TABLE_KEY_LENGTH + 1), "too-long"],
    ["😀".repeat(257), "too-long"], // 514 UTF-16 code units
    ["a\uD800b", "unpaired-surrogate"], // a lone high surrogate: no URL can carry it
    ["a\uDC00", "unpaired-surrogate"], // a lone low surrogate
    ["\uDE00\uD83D", "unpaired-surrogate"], // a pair in the wrong order
  ])("%p breaks %s", (value, rule) => {
    expect(tableKeyProblem(value)).toBe(rule);
  });

  it.each(["", "x".repeat(512), "é".repeat(512), "😀".repeat(256), "O'Brien", "a b:c_d-e.f~g", "\u00a0"])(
    "accepts %p",
    (value) => {
      expect(tableKeyProblem(value)).toBeUndefined();
    },
  );

  it("names the key and the rule in a typed error", () => {
    const error = thrown(() => validateTableKey("orders/2024", "rowKey", { actionIndex: 3 })) as TableKeyError;
    expect(isTableKeyError(error)).toBe(true);
    expect(error).toMatchObject({
      code: "InvalidTableKey",
      keyName: "rowKey",
      rule: "forbidden-character",
      actionIndex: 3,
      value: "orders/2024",
    });
    expect(error.message).toMatch(/rowKey \(action 3\) "orders\/2024" contains "\/"/);
    expect((thrown(() => validateTableKey("a\u0001", "partitionKey")) as Error).message).toMatch(
      /control character U\+0001/,
    );
    expect((thrown(() => validateTableKey(null, "partitionKey")) as Error).message).toMatch(/null is not/);
    expect((thrown(() => validateTableKey("a\uD800b", "rowKey")) as Error).message).toMatch(
      /unpaired UTF-16 surrogate U\+D800 at position 1/,
    );
  });
});

describe("planTransactions", () => {
  const upsert = (partitionKey: string, rowKey: string, extra: Record<string, unknown> = {}): TransactionAction => [
    "upsert",
    { partitionKey, rowKey, ...extra },
  ];

  it("groups by partition, keeps the order and cuts at exactly 100 operations", () => {
    const actions = Array.from({ length: 250 }, (_, i) => upsert(i % 2 ? "odd" : "even", String(i).padStart(3, "0")));
    const plan = planTransactions(location, actions);
    expect(plan.map((t) => [t.partitionKey, t.actions.length, t.sequenceInPartition])).toEqual([
      ["even", 100, 0],
      ["even", 25, 1],
      ["odd", 100, 0],
      ["odd", 25, 1],
    ]);
    expect(plan[0]!.actionIndexes.slice(0, 3)).toEqual([0, 2, 4]);
    expect(plan.flatMap((t) => t.actionIndexes).sort((a, b) => a - b)).toEqual(actions.map((_, i) => i));
    expect(
      planTransactions(
        location,
        actions.slice(0, 100).map((_, i) => upsert("p", String(i))),
      ),
    ).toHaveLength(1);
    expect(
      planTransactions(
        location,
        Array.from({ length: 101 }, (_, i) => upsert("p", String(i))),
      ).map((t) => t.actions.length),
    ).toEqual([100, 1]);
  });

  it("starts a new transaction when an entity comes back", () => {
    const plan = planTransactions(location, [
      upsert("p", "a"),
      upsert("p", "b"),
      ["delete", { partitionKey: "p", rowKey: "a" }],
      upsert("p", "c"),
    ]);
    expect(plan.map((t) => t.actionIndexes)).toEqual([
      [0, 1],
      [2, 3],
    ]);
  });

  it("cuts at the payload limit, from an estimate of the body", () => {
    const big = "x".repeat(30_000);
    const actions = Array.from({ length: 100 }, (_, i) => upsert("p", String(i), { a: big, b: big }));
    const plan = planTransactions(location, actions);
    expect(plan.length).toBe(2);
    for (const t of plan) expect(t.estimatedBytes).toBeLessThanOrEqual(TRANSACTION_LIMITS.maxPayloadBytes);
    expect(plan[0]!.estimatedBytes + plan[1]!.estimatedBytes).toBeGreaterThan(100 * 60_000);
    expect(planTransactions(location, actions, { maxPayloadBytes: 1_000_000 }).length).toBeGreaterThan(6);
  });

  it("refuses bad actions, naming the action and the rule", () => {
    const cases: [unknown, string][] = [
      [["merge", { partitionKey: "p", rowKey: "r" }], "unknown-kind"],
      [{ partitionKey: "p" }, "not-an-action"],
      [upsert("p", "r", { list: [1, 2] }), "unsupported-value"],
      [upsert("p", "r", { nested: { a: 1 } }), "unsupported-value"],
      [upsert("p", "r", { when: new Date("nope") }), "unsupported-value"],
      [upsert("p", "r", { text: "x".repeat(32_769) }), "value-too-large"],
      [upsert("p", "r", { bytes: new Uint8Array(65_537) }), "value-too-large"],
      [
        upsert("p", "r", Object.fromEntries(Array.from({ length: 253 }, (_, i) => [`p${i}`, i]))),
        "too-many-properties",
      ],
    ];
    for (const [action, rule] of cases) {
      const error = thrown(() =>
        planTransactions(location, [upsert("p", "ok"), action as TransactionAction]),
      ) as TableActionError;
      expect(isTableActionError(error)).toBe(true);
      expect(error.rule).toBe(rule);
      expect(error.actionIndex).toBe(1);
    }
    // Typed values the SDK knows are fine.
    expect(() =>
      planTransactions(location, [
        upsert("p", "r", {
          n: 1,
          b: true,
          big: 5n,
          d: new Date(),
          u: new Uint8Array(3),
          g: { value: "id", type: "Guid" },
          nothing: null,
        }),
      ]),
    ).not.toThrow();
    // Deletes carry no properties to check.
    expect(() => planTransactions(location, [["delete", { partitionKey: "p", rowKey: "r", list: [1] }]])).not.toThrow();
  });

  it("refuses bad keys before planning anything", () => {
    const error = thrown(() => planTransactions(location, [upsert("p", "a"), upsert("p", "b#c")])) as TableKeyError;
    expect(error).toMatchObject({ keyName: "rowKey", rule: "forbidden-character", actionIndex: 1 });
  });

  it("refuses limits the service does not allow", () => {
    expect(() => planTransactions(location, [], { maxOperationsPerTransaction: 101 })).toThrow(
      /maxOperationsPerTransaction/,
    );
    expect(() => planTransactions(location, [], { maxPayloadBytes: 5 * 1024 * 1024 })).toThrow(/maxPayloadBytes/);
  });
});
