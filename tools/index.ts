/**
 * `azure-storage-concurrency-cli`: the tools around the library, in a package of their own so that
 * an app that imports a lock does not install them. Its command (`azure-storage-concurrency`:
 * `lock`, `stress`, `bench`) is the package's `bin`; this module is the partition stress test as a
 * function, for key designs of your own.
 *
 * @packageDocumentation
 */
export {
  runPartitionStressTest,
  PARTITION_TARGET_ENTITIES_PER_SEC,
  HOT_PARTITION_SHARE,
  type PartitionStressOptions,
  type PartitionStressResult,
  type StressDesignResult,
  type StressSample,
  type StressProgress,
  type StressMix,
  type StressTableClient,
  type LatencySummary,
} from "./stress/engine.js";
export { stressDesigns, type StressKeyDesign, type BuiltInStressDesign } from "./stress/designs.js";
