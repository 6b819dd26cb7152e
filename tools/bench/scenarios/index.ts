/** Every benchmark scenario, by name, in the order `bench all` runs them. A new scenario is added here. */
import type { BenchScenario } from "../harness.js";
import { filesScenario } from "./files.js";
import { lockScenario } from "./lock.js";
import { semaphoreScenario } from "./semaphore.js";
import { batchScenario } from "./batch.js";
import { queueScenario } from "./queue.js";
import { inboxScenario } from "./inbox.js";
import { messagesScenario } from "./messages.js";
import { optimisticScenario } from "./optimistic.js";
import { retryScenario } from "./retry.js";
import { throttlingScenario } from "./throttling.js";
import { scheduleScenario } from "./schedule.js";

export const scenarios: Readonly<Record<string, BenchScenario>> = {
  retry: retryScenario,
  files: filesScenario,
  lock: lockScenario,
  semaphore: semaphoreScenario,
  batch: batchScenario,
  queue: queueScenario,
  inbox: inboxScenario,
  messages: messagesScenario,
  optimistic: optimisticScenario,
  throttling: throttlingScenario,
  schedule: scheduleScenario,
};
