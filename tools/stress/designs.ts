/**
 * Key designs for the partition stress test: how the n-th entity of a load is keyed. The test runs
 * the same load once per design, so that a coarse or sequential PartitionKey shows up next to a
 * spread one in the same report.
 */
import { bucketOf, padNumber } from "azure-storage-concurrency/tables";

/** How a load keys its entities. */
export interface StressKeyDesign {
  /** A short name for reports and the chart (letters, digits, `-`). */
  readonly name: string;
  /** One line: what the design does. */
  readonly description: string;
  /** The keys of the entity with sequence number `sequence` (0, 1, 2, …). */
  keyOf(sequence: number): {
    /** The entity's PartitionKey. */
    readonly partitionKey: string;
    /** The entity's RowKey. */
    readonly rowKey: string;
  };
  /**
   * Which partition serves a PartitionKey, in the design guide's model: the PartitionKey itself,
   * except that append-only or prepend-only keys are served together by the last range partition
   * ("Range partitions": every new key lands in the last range). Throughput per partition is
   * counted by this.
   * @default the PartitionKey
   */
  partitionOf?(partitionKey: string): string;
  /** What to do when its busiest partition goes over the target (the verdict's last sentence). */
  readonly advice?: string;
}

/** The built-in designs, by name. */
export type BuiltInStressDesign = "single" | "append" | "prepend" | "bucketed";

const WIDTH = 10;
const BUCKETS = 16;

/** The built-in key designs. */
export const stressDesigns: Readonly<Record<BuiltInStressDesign, StressKeyDesign>> = Object.freeze({
  single: {
    name: "single",
    description: "every entity in one PartitionKey (the design guide's stress test: load one target partition)",
    keyOf: (sequence: number) => ({ partitionKey: "target", rowKey: padNumber(sequence, WIDTH) }),
    advice: "The PartitionKey is too coarse: spread the load over more partitions.",
  },
  append: {
    name: "append",
    description: "append-only: each entity a new, ascending PartitionKey (all served by the last range partition)",
    keyOf: (sequence: number) => ({ partitionKey: padNumber(sequence, WIDTH), rowKey: "0" }),
    partitionOf: () => "last range partition",
    advice:
      "Append-only keys send every insert to the last range partition: prefix them with a hash bucket (bucketedKey) so that they spread.",
  },
  prepend: {
    name: "prepend",
    description: "prepend-only: each entity a new, descending PartitionKey (all served by the first range partition)",
    keyOf: (sequence: number) => ({ partitionKey: padNumber(9_999_999_999 - sequence, WIDTH), rowKey: "0" }),
    partitionOf: () => "first range partition",
    advice:
      "Prepend-only keys send every insert to the first range partition: prefix them with a hash bucket (bucketedKey) so that they spread.",
  },
  bucketed: {
    name: "bucketed",
    description: `ascending keys spread over ${BUCKETS} partitions by a stable hash bucket prefix`,
    keyOf: (sequence: number) => {
      const id = padNumber(sequence, WIDTH);
      return { partitionKey: String(bucketOf(id, BUCKETS)).padStart(2, "0"), rowKey: id };
    },
  },
});

/** A design given by name or as an object, resolved and checked. */
export function resolveDesign(design: BuiltInStressDesign | StressKeyDesign): StressKeyDesign {
  if (typeof design === "string") {
    const found = (stressDesigns as Record<string, StressKeyDesign>)[design];
    if (!found)
      throw new RangeError(
        `unknown key design ${JSON.stringify(design)}; the built-in ones are ${Object.keys(stressDesigns).join(", ")}.`,
      );
    return found;
  }
  if (typeof design?.keyOf !== "function" || typeof design.name !== "string" || !/^[A-Za-z0-9-]+$/.test(design.name)) {
    throw new TypeError("a key design needs a `name` (letters, digits, -) and a `keyOf(sequence)` function.");
  }
  return design;
}
