/** Every benchmark scenario, by name. Later capabilities add theirs here. */
import type { BenchScenario } from "../harness.js";
import { optimisticScenario } from "./optimistic.js";
import { retryScenario } from "./retry.js";

export const scenarios: Readonly<Record<string, BenchScenario>> = {
  retry: retryScenario,
  optimistic: optimisticScenario,
};
