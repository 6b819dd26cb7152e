/** A finished span of `instrumentation.mjs`'s in-memory exporter, as plain data. */
export interface FinishedSpan {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** The spans finished so far. */
export declare function finishedSpans(): FinishedSpan[];
