/**
 * The SMB properties that Create File and Set File Properties set from `x-ms-file-*` headers:
 * attributes, the three times and the permission.
 *
 * - Create File (https://learn.microsoft.com/rest/api/storageservices/create-file) makes a new file
 *   object, also over an existing one: each time is "now" unless given (the SDK documents "By
 *   default, the value will be set as now"), and the permission is inherited from the parent
 *   directory unless a permission or a key is given ("inherit" is the default). Recorded: Create File
 *   over an existing file with `x-ms-file-creation-time: now` answers a new creation time; the same
 *   directory's inherited permission gives the same key again.
 * - Set File Properties (https://learn.microsoft.com/rest/api/storageservices/set-file-properties)
 *   keeps what it is not given ("preserve", the default), and sets the change time to now. Recorded:
 *   a resize also moves the last write time, though `x-ms-file-last-write-time: preserve` was sent.
 * - Attributes come back in the service's order and spelling: recorded, `ReadOnly|Hidden|System|
 *   Temporary|Archive|…` answers `ReadOnly | Hidden | System | Archive | Temporary | …`; `None`
 *   answers `Archive` for a file.
 */
import { fail, type ResponderRequest } from "./protocol.js";
import { inheritedPermissionKey, isoWith7Digits, permissionKeyOf, type StoredFile } from "./store.js";

/** The attribute names in the order the service answers them. */
const ATTRIBUTE_ORDER = [
  "ReadOnly",
  "Hidden",
  "System",
  "Directory",
  "Archive",
  "Temporary",
  "Offline",
  "NotContentIndexed",
  "NoScrubData",
] as const;

/** The SMB properties of a new file object made by Create File. */
export function createdSmbProperties(
  req: ResponderRequest,
  now: number,
  parentPermissionKey: string,
  fileId: string,
): StoredFile["smb"] {
  const time = isoWith7Digits(now);
  const at = (name: string) => timeHeader(req, name, time, undefined);
  return {
    attributes: attributesHeader(req, undefined),
    creationTime: at("x-ms-file-creation-time"),
    lastWriteTime: at("x-ms-file-last-write-time"),
    changeTime: at("x-ms-file-change-time"),
    permissionKey: permissionHeader(req, parentPermissionKey, undefined),
    fileId,
  };
}

/** Applies Set File Properties' `x-ms-file-*` headers to a file; `resized` when it also changed the size. */
export function updateSmbProperties(
  req: ResponderRequest,
  file: StoredFile,
  now: number,
  parentPermissionKey: string,
  resized: boolean,
): void {
  const time = isoWith7Digits(now);
  const smb = file.smb;
  smb.attributes = attributesHeader(req, smb.attributes);
  smb.creationTime = timeHeader(req, "x-ms-file-creation-time", time, smb.creationTime);
  smb.lastWriteTime = resized ? time : timeHeader(req, "x-ms-file-last-write-time", time, smb.lastWriteTime);
  smb.changeTime = timeHeader(req, "x-ms-file-change-time", time, time);
  smb.permissionKey = permissionHeader(req, parentPermissionKey, smb.permissionKey);
}

/** A time header: "now", a time, or (where `kept` is given) "preserve"/absent for the kept value. */
function timeHeader(req: ResponderRequest, name: string, now: string, kept: string | undefined): string {
  const value = req.header(name);
  if (value === undefined) return kept ?? now;
  if (value.toLowerCase() === "now") return now;
  if (value.toLowerCase() === "preserve" && kept !== undefined) return kept;
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,7}))?Z$/.exec(value);
  if (!match) invalid(name);
  return `${match[1]}.${(match[2] ?? "").padEnd(7, "0")}Z`;
}

/** `x-ms-file-attributes`: a `|`-separated list, "None", or (where `kept` is given) "preserve". */
function attributesHeader(req: ResponderRequest, kept: string | undefined): string {
  const value = req.header("x-ms-file-attributes");
  if (value === undefined || (value.toLowerCase() === "preserve" && kept !== undefined)) return kept ?? "Archive";
  const names = value.split("|").map((name) => name.trim().toLowerCase());
  if (names.length === 1 && names[0] === "none") return "Archive";
  const known = ATTRIBUTE_ORDER.filter((name) => names.includes(name.toLowerCase()));
  if (known.length !== new Set(names).size) invalid("x-ms-file-attributes");
  return known.join(" | ");
}

/** `x-ms-file-permission-key`, or `x-ms-file-permission`: "inherit", a descriptor, or (where `kept` is given) "preserve". */
function permissionHeader(req: ResponderRequest, parentKey: string, kept: string | undefined): string {
  const key = req.header("x-ms-file-permission-key");
  const permission = req.header("x-ms-file-permission");
  if (key !== undefined && permission !== undefined) invalid("x-ms-file-permission");
  if (key !== undefined) return key;
  if (permission === undefined) return kept ?? inheritedPermissionKey(parentKey);
  if (permission.toLowerCase() === "inherit") return inheritedPermissionKey(parentKey);
  if (permission.toLowerCase() === "preserve" && kept !== undefined) return kept;
  if (permission.toLowerCase() === "preserve") invalid("x-ms-file-permission");
  return permissionKeyOf(permission);
}

function invalid(header: string): never {
  return fail(
    400,
    "InvalidHeaderValue",
    `The value for one of the HTTP headers is not in the correct format: ${header}.`,
  );
}
