/**
 * Lock blob names that mean exactly one blob. A lock is one blob: its lease, its holder record and
 * its fencing counter. A name that the URL or the service rewrites would silently share all three
 * with another name (`"./dot"` and `"dot"`), or fail later with an error that names no rule, so
 * such names are refused up front with a `TypeError` that names the rule.
 *
 * The rules, and where they come from:
 * - 1 to 1,024 characters, at most 254 path segments; no control characters (U+0000-U+001F, U+007F)
 *   ("Naming and Referencing Containers, Blobs, and Metadata",
 *   https://learn.microsoft.com/rest/api/storageservices/naming-and-referencing-containers--blobs--and-metadata);
 * - well-formed Unicode: a lone surrogate cannot be percent-encoded into the URL (the SDK's
 *   `encodeURIComponent` throws `URIError`);
 * - no `.` or `..` path segment: URLs resolve them before the request leaves (`"dir/../x"` is `"x"`,
 *   `"a/."` is `"a/"`), so the service never sees the name as written;
 * - no backslash: the service turns `\` into `/` (so does Azurite: `"a\\b"` is stored as `"a/b"`);
 * - not ending in `.` or `/`: the naming rules say to avoid those (trailing dots are dropped).
 */

/**
 * Returns `blobName` when it names exactly one blob as written; throws a `TypeError` naming the rule
 * it breaks otherwise (`name` is the option's name for the message).
 */
export function checkLockBlobName(name: string, blobName: unknown): string {
  if (typeof blobName !== "string" || blobName.length === 0) {
    throw new TypeError(`\`${name}\` must be a non-empty string.`);
  }
  const problem = lockNameProblem(blobName);
  if (problem !== undefined) {
    throw new TypeError(
      `\`${name}\` ${JSON.stringify(blobName.length > 60 ? `${blobName.slice(0, 60)}…` : blobName)} ${problem}`,
    );
  }
  return blobName;
}

const MAX_NAME_LENGTH = 1024;
const MAX_SEGMENTS = 254;
// eslint-disable-next-line no-control-regex -- the control characters are the point: the service refuses them
const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /\p{Surrogate}/u;

function lockNameProblem(blobName: string): string | undefined {
  if (blobName.length > MAX_NAME_LENGTH) {
    return `is ${blobName.length} characters long; blob names hold at most ${MAX_NAME_LENGTH}.`;
  }
  if (LONE_SURROGATE.test(blobName)) {
    return "holds a lone surrogate (half of a UTF-16 pair): blob names must be well-formed Unicode.";
  }
  if (CONTROL.test(blobName)) return "holds a control character, which blob names may not contain.";
  if (blobName.includes("\\")) {
    return 'holds a backslash, which the service turns into "/": write "/" if you mean a path.';
  }
  const segments = blobName.split("/");
  if (segments.length > MAX_SEGMENTS) {
    return `has ${segments.length} path segments; blob names have at most ${MAX_SEGMENTS}.`;
  }
  const dots = segments.find((segment) => segment === "." || segment === "..");
  if (dots !== undefined) {
    return (
      `has a "${dots}" path segment, which the URL resolves before the request is sent, so the lock would be ` +
      `another name's blob (its lease and fencing counter): lock names may not have "." or ".." segments.`
    );
  }
  if (blobName.endsWith(".") || blobName.endsWith("/")) {
    return `ends with "${blobName.at(-1)}", which the service's naming rules exclude (trailing dots are dropped): lock names may not end with "." or "/".`;
  }
  return undefined;
}

/**
 * One path segment of a generated lock name (a table name or key): percent-encoded, with trailing
 * dots encoded too, so that no key (`"."`, `".."`, `"v1."`) makes a segment the rules above refuse.
 */
export function lockNameSegment(name: string, part: string): string {
  if (LONE_SURROGATE.test(part)) {
    throw new TypeError(`\`${name}\` holds a lone surrogate (half of a UTF-16 pair): it must be well-formed Unicode.`);
  }
  return encodeURIComponent(part).replace(/\.+$/, (dots) => "%2E".repeat(dots.length));
}
