/** The report's section writer of each scenario, in the report's order; others get the generic one. */
import { batchSection } from "./batch.js";
import { filesSection } from "./files.js";
import { inboxSection } from "./inbox.js";
import { lockSection } from "./lock.js";
import { semaphoreSection } from "./semaphore.js";
import { optimisticSection } from "./optimistic.js";
import { queueSection } from "./queue.js";
import { retrySection } from "./retry.js";
import { throttlingSection } from "./throttling.js";
import type { SectionWriter } from "./section.js";

export { genericSection } from "./generic.js";

export const sectionWriters: Readonly<Record<string, SectionWriter>> = {
  retry: retrySection,
  optimistic: optimisticSection,
  lock: lockSection,
  semaphore: semaphoreSection,
  queue: queueSection,
  inbox: inboxSection,
  batch: batchSection,
  files: filesSection,
  throttling: throttlingSection,
};
