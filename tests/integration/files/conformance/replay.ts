/**
 * Replays one behaviour against a Files responder over plain HTTP (no SDK in between: the request is
 * the recorded request) and lists every answer that differs from the expected one.
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { SmbHandle, SmbSimulator } from "../../../../src/testing/index.js";
import { SETUP } from "./steps.js";
import type { Behaviour, RequestStep, Step } from "./types.js";

/** The lease id the SDK's tests fix (`guid` in test/leaseclient.spec.ts). */
const SDK_TEST_GUID = "e9890485-bf47-4d9a-b3d0-aceb18506124";

/** What a replay needs from the responder. */
export interface ReplayTarget {
  /** The responder's file endpoint, `http://127.0.0.1:<port>/<account>`. */
  readonly endpoint: string;
  readonly smb: SmbSimulator;
  /** Moves the responder's clock on. */
  advance(ms: number): void;
}

/** Replays `behaviour` (after its `given` setup) and returns the differences, empty when it matches. */
export async function replay(behaviour: Behaviour, target: ReplayTarget): Promise<string[]> {
  const suffix = randomBytes(4).toString("hex");
  const names = { share: `conf${suffix}`, dir: `dir${suffix}`, file: `file${suffix}` };
  const values = new Map<string, string>([
    ["guid", SDK_TEST_GUID],
    ["A", randomUUID()],
    ["B", randomUUID()],
  ]);
  const fill = (text: string) =>
    text.replace(/\{(\w+)\}/g, (whole, name: string) => values.get(name) ?? `<${name} not captured>`);
  const handles: SmbHandle[] = [];
  const differences: string[] = [];
  const steps: Step[] = [...SETUP[behaviour.given], ...behaviour.steps];
  try {
    for (const [index, step] of steps.entries()) {
      const where = `step ${index + 1}`;
      if ("smb" in step) {
        const difference = smbStep(step.smb, target.smb, `${names.share}/${names.dir}/${names.file}`, handles);
        if (difference) differences.push(`${where} (SMB): ${difference}`);
        continue;
      }
      if (step.wait) target.advance(step.wait);
      const response = await send(step, target.endpoint, names, suffix, fill);
      differences.push(...compare(step, response, fill).map((d) => `${where} (${step.req}): ${d}`));
      for (const [name, header] of Object.entries(step.capture ?? {})) {
        const value = response.headers.get(header);
        if (value !== null) values.set(name, value);
      }
    }
  } finally {
    for (const handle of handles) handle.close();
  }
  return differences;
}

async function send(
  step: RequestStep,
  endpoint: string,
  names: { share: string; dir: string; file: string },
  suffix: string,
  fill: (text: string) => string,
): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const [method, target] = step.req.split(" ") as [string, string];
  const [resource, query] = target.split("?") as [string, string | undefined];
  const path = {
    share: names.share,
    dir: `${names.share}/${names.dir}`,
    file: `${names.share}/${names.dir}/${names.file}`,
    "nodir/file": `${names.share}/nodir${suffix}/${names.file}`,
  }[resource];
  if (path === undefined) throw new Error(`Unknown target '${resource}' in '${step.req}'.`);
  const headers: Record<string, string> = { "x-ms-version": "2021-10-04" };
  for (const [name, value] of Object.entries(step.headers ?? {})) headers[name] = fill(value);
  const response = await fetch(`${endpoint}/${path}${query ? `?${query}` : ""}`, {
    method,
    headers,
    ...(step.body !== undefined ? { body: step.body } : method === "PUT" ? { body: "" } : {}),
  });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

function compare(
  step: RequestStep,
  response: { status: number; headers: Headers; body: Buffer },
  fill: (text: string) => string,
): string[] {
  const differences: string[] = [];
  const code = response.headers.get("x-ms-error-code") ?? undefined;
  if (response.status !== step.status || code !== step.code) {
    differences.push(`answered ${response.status} ${code ?? ""}, the service ${step.status} ${step.code ?? ""}`);
  }
  for (const [name, expected] of Object.entries(step.answers ?? {})) {
    const actual = response.headers.get(name);
    const ok =
      expected === null
        ? actual === null
        : expected === "*"
          ? actual !== null
          : expected.startsWith("!")
            ? actual !== null && actual !== fill(expected.slice(1))
            : actual === fill(expected);
    if (!ok)
      differences.push(`${name}: ${actual ?? "(absent)"}, expected ${expected === null ? "(absent)" : fill(expected)}`);
  }
  if (step.bodyBase64 !== undefined && response.body.toString("base64") !== step.bodyBase64) {
    differences.push(`body ${response.body.toString("base64")}, expected ${step.bodyBase64}`);
  }
  return differences;
}

function smbStep(
  action: Extract<Step, { smb: unknown }>["smb"],
  smb: SmbSimulator,
  path: string,
  handles: SmbHandle[],
): string | undefined {
  if (action === "closeAll") {
    for (const handle of handles.splice(0)) handle.close();
    return undefined;
  }
  if (action === "deleteOnClose") {
    handles[handles.length - 1]?.deleteOnClose();
    return undefined;
  }
  const access = { read: false, write: false, delete: false, ...action.open };
  try {
    handles.push(smb.openFile(path, { access, share: action.share ?? {} }));
    return action.refused ? "the SMB open succeeded, expected it refused" : undefined;
  } catch (error) {
    return action.refused && (error as Error).name === "SmbSharingViolationError"
      ? undefined
      : `the SMB open failed (${String(error)})`;
  }
}
