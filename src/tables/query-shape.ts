/**
 * Which kind of query a filter is, by the table of "Designing a Scalable Partitioning Strategy for
 * Azure Table Storage" (best first):
 *
 * | kind | PartitionKey | RowKey | performance |
 * | --- | --- | --- | --- |
 * | point | exact | exact | best |
 * | row range scan | exact | partial | good on small partitions, worse on large ones |
 * | partition range scan | partial | partial | good when few partition servers are touched |
 * | table scan | partial or none | partial or none | poor; worst when every partition is scanned |
 *
 * The filter is read with a small OData parser (comparisons, `and`, `or`, `not`, parentheses,
 * string, number, boolean, datetime, guid and binary literals). An `or` whose branches differ on
 * PartitionKey is a table scan: the service does not turn it into several point or range lookups
 * ("Design for querying", learn.microsoft.com/azure/storage/tables/table-storage-design-for-query:
 * an `or` over keys is not treated as a range query). Split such a query into one query per partition.
 */

/** The four kinds of query, best first. */
export type QueryKind = "point" | "row-range-scan" | "partition-range-scan" | "table-scan";

/** A bound of a key range. */
export interface KeyBound {
  /** The key value at the bound, as the filter's string literal gives it (quotes undone). */
  readonly value: string;
  /** Whether `value` itself is in the range (`ge`/`le`, or `eq`) or not (`gt`/`lt`). */
  readonly inclusive: boolean;
}

/** What a filter says about one key property. */
export type KeyConstraint =
  | {
      /** The filter lets exactly one value of the key through (`eq`, or `ge` and `le` on one value). */
      readonly kind: "exact";
      /** That value. */
      readonly value: string;
    }
  | {
      /** The filter bounds the key on one side or both. */
      readonly kind: "range";
      /** The lower bound; absent when the range is open below. */
      readonly lower?: KeyBound;
      /** The upper bound; absent when the range is open above. */
      readonly upper?: KeyBound;
    }
  | {
      /** The filter does not narrow the key (no comparison on it, or only under `not`, `ne` or an `or` whose branches differ). */
      readonly kind: "none";
    };

/** The verdict of {@link classifyQuery}. */
export interface QueryShape {
  /** Which kind of query it is. */
  readonly kind: QueryKind;
  /** 1 (point query, best) to 4 (table scan, worst). */
  readonly rank: 1 | 2 | 3 | 4;
  /** What the filter pins PartitionKey to. */
  readonly partitionKey: KeyConstraint;
  /** What the filter pins RowKey to. */
  readonly rowKey: KeyConstraint;
  /** One sentence: what the service does for it and what to do about it. */
  readonly explanation: string;
}

type Token =
  | { type: "ident"; value: string; at: number }
  | { type: "string"; value: string; at: number }
  | { type: "literal"; value: string; at: number }
  | { type: "op"; value: "eq" | "ne" | "gt" | "ge" | "lt" | "le"; at: number }
  | { type: "and" | "or" | "not" | "(" | ")"; at: number };

type Node =
  | { type: "and" | "or"; left: Node; right: Node }
  | { type: "not"; operand: Node }
  | { type: "compare"; op: "eq" | "ne" | "gt" | "ge" | "lt" | "le"; left: Token; right: Token }
  | { type: "other" };

function syntaxError(filter: string, at: number, what: string): RangeError {
  return new RangeError(
    `\`filter\` could not be read at position ${at} (${what}): ${JSON.stringify(filter.slice(Math.max(0, at - 10), at + 20))}.`,
  );
}

function tokenize(filter: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < filter.length) {
    const ch = filter[i]!;
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === "(" || ch === ")") {
      tokens.push({ type: ch, at: i++ });
    } else if (ch === "'") {
      const start = i++;
      let value = "";
      for (;;) {
        if (i >= filter.length) throw syntaxError(filter, start, "unterminated string");
        if (filter[i] === "'") {
          if (filter[i + 1] === "'") {
            value += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += filter[i++];
      }
      tokens.push({ type: "string", value, at: start });
    } else if (/[A-Za-z_]/.test(ch)) {
      const start = i;
      while (i < filter.length && /[A-Za-z0-9_.]/.test(filter[i]!)) i++;
      const word = filter.slice(start, i);
      const lower = word.toLowerCase();
      if (filter[i] === "'" && /^(datetime|guid|x|binary)$/.test(lower)) {
        // a typed literal: datetime'2024-01-01T00:00:00Z', guid'…', X'0A'
        const end = filter.indexOf("'", i + 1);
        if (end < 0) throw syntaxError(filter, start, "unterminated literal");
        tokens.push({ type: "literal", value: filter.slice(start, end + 1), at: start });
        i = end + 1;
      } else if (lower === "and" || lower === "or" || lower === "not") tokens.push({ type: lower, at: start });
      else if (["eq", "ne", "gt", "ge", "lt", "le"].includes(lower)) {
        tokens.push({ type: "op", value: lower as "eq", at: start });
      } else if (lower === "true" || lower === "false" || lower === "null")
        tokens.push({ type: "literal", value: lower, at: start });
      else tokens.push({ type: "ident", value: word, at: start });
    } else if (/[-0-9.]/.test(ch)) {
      const start = i++;
      while (i < filter.length && /[0-9.eE+\-LlDdMmFf]/.test(filter[i]!)) i++;
      tokens.push({ type: "literal", value: filter.slice(start, i), at: start });
    } else {
      throw syntaxError(filter, i, `unexpected ${JSON.stringify(ch)}`);
    }
  }
  return tokens;
}

function parse(filter: string): Node {
  const tokens = tokenize(filter);
  let pos = 0;
  const peek = () => tokens[pos];
  const orExpr = (): Node => {
    let node = andExpr();
    while (peek()?.type === "or") {
      pos++;
      node = { type: "or", left: node, right: andExpr() };
    }
    return node;
  };
  const andExpr = (): Node => {
    let node = unary();
    while (peek()?.type === "and") {
      pos++;
      node = { type: "and", left: node, right: unary() };
    }
    return node;
  };
  const unary = (): Node => {
    const token = peek();
    if (!token) throw syntaxError(filter, filter.length, "unexpected end");
    if (token.type === "not") {
      pos++;
      return { type: "not", operand: unary() };
    }
    if (token.type === "(") {
      pos++;
      const node = orExpr();
      if (peek()?.type !== ")") throw syntaxError(filter, peek()?.at ?? filter.length, "missing )");
      pos++;
      return node;
    }
    if (token.type === "ident" || token.type === "string" || token.type === "literal") {
      pos++;
      const op = peek();
      if (op?.type !== "op") return { type: "other" }; // a bare boolean property or literal
      pos++;
      const right = peek();
      if (!right || (right.type !== "ident" && right.type !== "string" && right.type !== "literal")) {
        throw syntaxError(filter, right?.at ?? filter.length, "expected a value");
      }
      pos++;
      return { type: "compare", op: op.value, left: token, right };
    }
    throw syntaxError(filter, token.at, `unexpected ${token.type}`);
  };
  const node = orExpr();
  if (pos < tokens.length) throw syntaxError(filter, tokens[pos]!.at, "unexpected text after the expression");
  return node;
}

/** An interval of strings; `empty` when the filter contradicts itself. */
interface Interval {
  lower?: KeyBound;
  upper?: KeyBound;
  empty?: boolean;
}
const ANY: Interval = {};

const FLIP = { eq: "eq", ne: "ne", gt: "lt", ge: "le", lt: "gt", le: "ge" } as const;

function tighterLower(a: KeyBound | undefined, b: KeyBound | undefined): KeyBound | undefined {
  if (!a || !b) return a ?? b;
  if (a.value !== b.value) return a.value > b.value ? a : b;
  return a.inclusive ? b : a;
}
function tighterUpper(a: KeyBound | undefined, b: KeyBound | undefined): KeyBound | undefined {
  if (!a || !b) return a ?? b;
  if (a.value !== b.value) return a.value < b.value ? a : b;
  return a.inclusive ? b : a;
}
function intersect(a: Interval, b: Interval): Interval {
  const lower = tighterLower(a.lower, b.lower);
  const upper = tighterUpper(a.upper, b.upper);
  const empty =
    a.empty ||
    b.empty ||
    (lower &&
      upper &&
      (lower.value > upper.value || (lower.value === upper.value && !(lower.inclusive && upper.inclusive))));
  return { ...(lower ? { lower } : {}), ...(upper ? { upper } : {}), ...(empty ? { empty: true } : {}) };
}
function isExact(i: Interval): boolean {
  return (
    !i.empty && !!i.lower && !!i.upper && i.lower.inclusive && i.upper.inclusive && i.lower.value === i.upper.value
  );
}
function same(a: Interval, b: Interval): boolean {
  const bound = (x?: KeyBound, y?: KeyBound) =>
    (!x && !y) || (!!x && !!y && x.value === y.value && x.inclusive === y.inclusive);
  return !!a.empty === !!b.empty && bound(a.lower, b.lower) && bound(a.upper, b.upper);
}

/** What a node pins `key` to: an interval that contains every value the node lets through. */
function constraintOf(node: Node, key: string): Interval {
  switch (node.type) {
    case "and":
      return intersect(constraintOf(node.left, key), constraintOf(node.right, key));
    case "or": {
      const left = constraintOf(node.left, key);
      const right = constraintOf(node.right, key);
      if (left.empty) return right;
      if (right.empty) return left;
      return same(left, right) ? left : ANY; // different keys in an `or`: the service scans
    }
    case "not":
    case "other":
      return ANY;
    case "compare": {
      let { op } = node;
      let property = node.left;
      let value = node.right;
      if (property.type !== "ident") {
        [property, value] = [value, property];
        op = FLIP[op];
      }
      if (property.type !== "ident" || property.value !== key || value.type !== "string") return ANY;
      const bound = (inclusive: boolean): KeyBound => ({ value: value.value, inclusive });
      switch (op) {
        case "eq":
          return { lower: bound(true), upper: bound(true) };
        case "gt":
        case "ge":
          return { lower: bound(op === "ge") };
        case "lt":
        case "le":
          return { upper: bound(op === "le") };
        default:
          return ANY; // ne: everything else matches
      }
    }
  }
}

function toConstraint(interval: Interval): KeyConstraint {
  if (isExact(interval)) return { kind: "exact", value: interval.lower!.value };
  if (interval.lower || interval.upper) {
    return {
      kind: "range",
      ...(interval.lower ? { lower: interval.lower } : {}),
      ...(interval.upper ? { upper: interval.upper } : {}),
    };
  }
  return { kind: "none" };
}

/**
 * Classifies an OData filter by the partitioning guide's table of query kinds, so that you see
 * which of your queries will be slow before they are.
 *
 * @param filter - the `$filter` text, as given to `listEntities({ queryOptions: { filter } })`.
 * @throws RangeError when the filter cannot be read.
 *
 * @example
 * ```ts
 * import { classifyQuery } from "azure-storage-concurrency/tables";
 *
 * classifyQuery("PartitionKey eq 'NYC 2011__Full' and RowKey eq 'BIB:01234'").kind; // "point"
 * classifyQuery("PartitionKey eq 'NYC 2011__Full' and RowKey ge 'AGE:' and RowKey lt 'AGE;'").kind; // "row-range-scan"
 * classifyQuery("Age gt 50").kind; // "table-scan"
 * ```
 */
export function classifyQuery(filter: string | undefined): QueryShape {
  if (filter !== undefined && typeof filter !== "string") throw new TypeError("`filter` must be a string.");
  const tree: Node = filter === undefined || filter.trim() === "" ? { type: "other" } : parse(filter);
  const pk = constraintOf(tree, "PartitionKey");
  const rk = constraintOf(tree, "RowKey");
  const partitionKey = toConstraint(pk);
  const rowKey = toConstraint(rk);
  if (pk.empty || rk.empty) {
    return {
      kind: "point",
      rank: 1,
      partitionKey,
      rowKey,
      explanation: "The filter contradicts itself on a key and matches nothing.",
    };
  }
  if (isExact(pk) && isExact(rk)) {
    return {
      kind: "point",
      rank: 1,
      partitionKey,
      rowKey,
      explanation: "Point query: one partition, one row; the best kind (the clustered index finds it directly).",
    };
  }
  if (isExact(pk)) {
    const bounded = rowKey.kind === "range";
    return {
      kind: "row-range-scan",
      rank: 2,
      partitionKey,
      rowKey,
      explanation: bounded
        ? "Row range scan: one partition server reads a range of RowKeys; good on small partitions, slower as the partition grows."
        : "Row range scan over the whole partition (no RowKey range): every row of the partition is read; bound RowKey to read less.",
    };
  }
  if (partitionKey.kind === "range") {
    return {
      kind: "partition-range-scan",
      rank: 3,
      partitionKey,
      rowKey,
      explanation:
        "Partition range scan: a range of PartitionKeys, possibly over several partition servers (each boundary costs a continuation round trip); good when the range touches few partitions.",
    };
  }
  return {
    kind: "table-scan",
    rank: 4,
    partitionKey,
    rowKey,
    explanation:
      "Table scan: no PartitionKey equality or range, so every partition is read (an `or` over different PartitionKeys scans too); query one partition at a time, or add an index row keyed by what you search for.",
  };
}
