/**
 * The library's version, the instrumentation scope's version (the tracer's and the meter's), so
 * that a backend can tell which release emitted a span or a metric.
 *
 * A constant rather than a read of package.json at run time: bundlers (esbuild, webpack, Vite) do
 * not ship package.json beside the code, and a JSON import would inline the whole manifest.
 * `tests/unit/observability/buckets.test.ts` fails when it differs from package.json's `version`,
 * and `npm version` rewrites it (the `version` script, `scripts/sync-version.mjs`).
 */
export const LIBRARY_VERSION = "0.1.0";
