/**
 * Create File, Put Range, Get File (Properties), Set File Metadata/Properties and Delete File as
 * recorded from the real service by the Azure SDK for JS (Azure/azure-sdk-for-js,
 * `sdk/storage/storage-file-share/recordings/node/fileclient/`, service version 2021-10-04, made by
 * test/fileclient.spec.ts): the facts extracted by hand (method, path shape, the headers that
 * matter, status, `x-ms-error-code`, the SMB property and lease answer headers, the bodies).
 */
import { AVAILABLE, createFile, PRESERVE } from "./steps.js";
import type { Behaviour } from "./types.js";

const F = (name: string) => `node/fileclient/recording_${name}.json`;
const TESTS = "test/fileclient.spec.ts >";
const HELLO = { "x-ms-range": "bytes=0-4", "x-ms-write": "update" };
const WORLD = { "x-ms-range": "bytes=5-9", "x-ms-write": "update" };

/** Recording-backed file behaviours. */
export const RECORDED_FILES: readonly Behaviour[] = [
  {
    name: "Create File without options: 201, attributes Archive, a permission inherited from the directory; a zero-filled, unleased file",
    source: { recording: F("create_with_default_parameters"), test: `${TESTS} create with default parameters` },
    given: "share+dir",
    steps: [
      {
        req: "PUT file",
        headers: createFile(11),
        status: 201,
        answers: { "x-ms-file-attributes": "Archive", "x-ms-file-permission-key": "!{dirKey}" },
      },
      {
        req: "GET file",
        status: 200,
        answers: { ...AVAILABLE, "content-length": "11" },
        bodyBase64: "AAAAAAAAAAAAAAA=",
      },
    ],
  },
  {
    name: "Create File with every option: attributes answered in the service's order and spelling; times, key, HTTP headers and metadata kept",
    source: {
      recording: F("create_with_all_parameters_configured_setting_filepermissionkey"),
      test: `${TESTS} create with all parameters configured setting filePermissionKey`,
    },
    given: "share+dir",
    steps: [
      {
        req: "PUT file",
        headers: {
          "x-ms-type": "file",
          "x-ms-content-length": "512",
          "x-ms-cache-control": "fileCacheControl",
          "x-ms-content-disposition": "fileContentDisposition",
          "x-ms-content-encoding": "fileContentEncoding",
          "x-ms-content-language": "fileContentLanguage",
          "x-ms-content-type": "fileContentType",
          "x-ms-file-attributes": "ReadOnly|Hidden|System|Temporary|Archive|Offline|NotContentIndexed|NoScrubData",
          "x-ms-file-change-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-creation-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-last-write-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-permission-key": "{dirKey}",
          "x-ms-meta-key1": "vala",
          "x-ms-meta-key2": "valb",
        },
        status: 201,
        answers: {
          "x-ms-file-attributes":
            "ReadOnly | Hidden | System | Archive | Temporary | Offline | NotContentIndexed | NoScrubData",
          "x-ms-file-creation-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-change-time": "2023-06-07T22:52:55.6780000Z",
          "x-ms-file-permission-key": "{dirKey}",
        },
      },
      {
        req: "HEAD file",
        status: 200,
        answers: {
          "cache-control": "fileCacheControl",
          "content-disposition": "fileContentDisposition",
          "content-encoding": "fileContentEncoding",
          "content-language": "fileContentLanguage",
          "content-type": "fileContentType",
          "content-length": "512",
          "x-ms-meta-key1": "vala",
          "x-ms-meta-key2": "valb",
          "x-ms-file-last-write-time": "2023-06-07T22:52:55.6780000Z",
          ...AVAILABLE,
        },
      },
    ],
  },
  {
    name: "Put Range writes within the file (201, the range's Content-MD5, the new last write time); Get File with a range answers 206",
    source: { recording: F("uploadrange"), test: `${TESTS} uploadRange` },
    given: "share+dir",
    steps: [
      { req: "PUT file", headers: createFile(10), status: 201, capture: { created: "x-ms-file-creation-time" } },
      {
        req: "PUT file?comp=range",
        headers: HELLO,
        body: "Hello",
        wait: 250,
        status: 201,
        answers: { "content-md5": "ixqZU8RhEpaoJ6v4xHgE1w==", "x-ms-file-last-write-time": "!{created}" },
      },
      {
        req: "PUT file?comp=range",
        headers: WORLD,
        body: "World",
        status: 201,
        answers: { "content-md5": "9aeSTmIehMkoCpon4by39g==" },
      },
      {
        req: "GET file",
        headers: { "x-ms-range": "bytes=0-7" },
        status: 206,
        answers: {
          "content-range": "bytes 0-7/10",
          "content-length": "8",
          "x-ms-file-creation-time": "{created}",
          "x-ms-file-change-time": "!{created}",
        },
        bodyBase64: "SGVsbG9Xb3I=",
      },
    ],
  },
  {
    name: "Put Range with x-ms-write: clear zeroes the range (201, no Content-MD5)",
    source: { recording: F("clearrange"), test: `${TESTS} clearRange` },
    given: "share+dir",
    steps: [
      { req: "PUT file", headers: createFile(10), status: 201 },
      { req: "PUT file?comp=range", headers: HELLO, body: "Hello", status: 201 },
      { req: "PUT file?comp=range", headers: WORLD, body: "World", status: 201 },
      {
        req: "PUT file?comp=range",
        headers: { "x-ms-range": "bytes=1-8", "x-ms-write": "clear" },
        status: 201,
        answers: { "content-md5": null, "x-ms-file-last-write-time": "*" },
      },
      { req: "GET file", status: 200, bodyBase64: "SAAAAAAAAAAAZA==" },
    ],
  },
  {
    name: "Set File Properties with x-ms-content-length resizes the file; the last write time moves though 'preserve' was sent",
    source: { recording: F("resize"), test: `${TESTS} resize` },
    given: "share+dir+file",
    steps: [
      {
        req: "PUT file?comp=properties",
        headers: { ...PRESERVE, "x-ms-content-length": "1" },
        wait: 250,
        status: 200,
        answers: {
          "x-ms-file-creation-time": "{created}",
          "x-ms-file-last-write-time": "!{created}",
          "x-ms-file-change-time": "!{created}",
        },
      },
      { req: "HEAD file", status: 200, answers: { "content-length": "1", ...AVAILABLE } },
    ],
  },
  {
    name: "Set File Metadata replaces the metadata; the change time moves, the last write time does not",
    source: { recording: F("setmetadata_with_new_metadata_set"), test: `${TESTS} setMetadata with new metadata set` },
    given: "share+dir+file",
    steps: [
      { req: "PUT file?comp=metadata", headers: { "x-ms-meta-a": "a", "x-ms-meta-b": "b" }, wait: 250, status: 200 },
      {
        req: "HEAD file",
        status: 200,
        answers: {
          "x-ms-meta-a": "a",
          "x-ms-meta-b": "b",
          "x-ms-file-last-write-time": "{created}",
          "x-ms-file-change-time": "!{created}",
        },
      },
    ],
  },
  {
    name: "Delete File: 202",
    source: { recording: F("delete"), test: `${TESTS} delete` },
    given: "share+dir+file",
    steps: [{ req: "DELETE file", status: 202 }],
  },
  {
    name: "Delete File in a directory that does not exist: 404 ParentNotFound",
    source: {
      recording: F("deleteifexists_when_parent_not_exists"),
      test: `${TESTS} deleteIfExists when parent not exists`,
    },
    given: "share+dir",
    steps: [{ req: "DELETE nodir/file", status: 404, code: "ParentNotFound" }],
  },
];
