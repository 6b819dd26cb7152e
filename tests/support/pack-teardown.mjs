import { rmSync } from "node:fs";

export default function globalTeardown() {
  if (globalThis.__ASC_TARBALL_DIR__) rmSync(globalThis.__ASC_TARBALL_DIR__, { recursive: true, force: true });
}
