/** Every benchmark scenario, by name. Later capabilities add theirs here. */
import type { BenchScenario } from "../harness.js";
import { queueScenario } from "./queue.js";
import { retryScenario } from "./retry.js";

export const scenarios: Readonly<Record<string, BenchScenario>> = {
  retry: retryScenario,
  queue: queueScenario,
};
