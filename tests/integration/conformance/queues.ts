/**
 * Queues: what the queue consumer sends (its start-up checks, receive, the visibility updates of
 * heartbeats, releases and retry delays, delete, the poison queue's create and send), and the
 * answers it branches on: the pop receipt and next-visible time, 400 PopReceiptMismatch, 404
 * MessageNotFound and QueueNotFound, 403 for a credential without read rights.
 *
 * Stale pop receipts, plainly: the service's pages do not agree on the answer. "Queue Storage error
 * codes" lists 400 PopReceiptMismatch ("did not match the pop receipt for a dequeued message");
 * "Delete Message" says that when no message with a matching pop receipt is found the service
 * answers 404 (Not Found), in every case where the receipt is no longer valid; "Update Message"
 * only says the update fails. No recording has either. Azurite answers 400 PopReceiptMismatch to
 * both. The library treats both answers alike where a stale receipt can be its own doing (see
 * `src/queue/hold.ts`), and the live suite records which one the service gives.
 */
import { message } from "./steps.js";
import { PAGE, RECORDINGS } from "./sources.js";
import type { Behaviour, RequestStep } from "./types.js";

/** Update Message (`visibilitytimeout` seconds) with the receipt captured as `receipt`. */
const update = (
  receipt: string,
  seconds: number,
  expected: Partial<RequestStep> & { status: number },
): RequestStep => ({
  req: `PUT {q}/messages/{id}?popreceipt={${receipt}:url}&visibilitytimeout=${seconds}`,
  body: message("hello"),
  ...expected,
});
/** Delete Message with the receipt captured as `receipt`. */
const remove = (receipt: string, expected: Partial<RequestStep> & { status: number }): RequestStep => ({
  req: `DELETE {q}/messages/{id}?popreceipt={${receipt}:url}`,
  ...expected,
});

const recorded: Behaviour[] = [
  {
    name: "Create Queue: 201; again without metadata 204; again with other metadata 409 QueueAlreadyExists",
    service: "queue",
    features: ["queue-consumer"],
    source: { recording: RECORDINGS.queueCreateIfNotExists },
    given: "nothing",
    steps: [
      { req: "PUT {q}", status: 201 },
      { req: "PUT {q}", status: 204 },
      { req: "PUT {q}", headers: { "x-ms-meta-key": "value" }, status: 409, code: "QueueAlreadyExists" },
    ],
  },
  {
    name: "Get Queue Properties (GET ?comp=metadata) of a missing queue is 404 QueueNotFound",
    service: "queue",
    features: ["queue-consumer"],
    source: { recording: RECORDINGS.queueGetPropertiesNegative },
    given: "queue",
    steps: [
      { req: "GET {q}?comp=metadata", status: 200 },
      { req: "GET {q}x?comp=metadata", status: 404, code: "QueueNotFound" },
    ],
  },
  {
    name: "Put Message with a time to live is 201; Get Messages with a visibility timeout is 200 with the message, a pop receipt, its next-visible time and dequeue count 1, and hides it",
    service: "queue",
    features: ["queue-consumer"],
    source: { recording: RECORDINGS.queueEnqueueDequeue },
    given: "queue",
    steps: [
      {
        req: "POST {q}/messages?messagettl=60",
        body: message("hello"),
        status: 201,
        bodyHas: ["<MessageId>", "<PopReceipt>", "<TimeNextVisible>"],
        capture: { id: "xml:MessageId" },
      },
      {
        req: "GET {q}/messages?numofmessages=2&visibilitytimeout=10",
        status: 200,
        bodyHas: ["<MessageId>{id}</MessageId>", "<PopReceipt>", "<TimeNextVisible>", "<DequeueCount>1</DequeueCount>"],
      },
      { req: "GET {q}/messages?numofmessages=1&visibilitytimeout=10", status: 200, bodyHas: ["<QueueMessagesList"] },
    ],
  },
  {
    name: "Update Message is 204 with a new pop receipt (x-ms-popreceipt) and x-ms-time-next-visible; the message stays hidden",
    service: "queue",
    features: ["queue-consumer"],
    source: { recording: RECORDINGS.queueUpdateMessage },
    given: "queue+message",
    steps: [
      update("sent", 10, {
        status: 204,
        answers: { "x-ms-popreceipt": "!{sent}", "x-ms-time-next-visible": "*" },
      }),
      { req: "GET {q}/messages?peekonly=true", status: 200, bodyHas: ["<QueueMessagesList"] },
    ],
  },
];

const STALE = "the receipt was replaced by a later Update Message";
const pageBacked: Behaviour[] = [
  {
    name: "Update Message with a receipt a later update replaced is 400 PopReceiptMismatch",
    service: "queue",
    features: ["queue-consumer"],
    source: {
      page: PAGE.queueErrorCodes,
      says: `PopReceiptMismatch (400): the pop receipt did not match the one of a dequeued message (here ${STALE}); Update Message only says the update fails`,
    },
    given: "queue+received",
    steps: [
      update("pop", 30, { status: 204, capture: { pop2: "header:x-ms-popreceipt" } }),
      update("pop", 30, { status: 400, code: "PopReceiptMismatch" }),
    ],
  },
  {
    name: "Delete Message with a receipt a later update replaced is 404 (no message with a matching pop receipt)",
    service: "queue",
    features: ["queue-consumer"],
    source: {
      page: PAGE.deleteMessage,
      says: "if a message with a matching pop receipt isn't found, the service returns 404 (Not Found), in every case where the receipt is no longer valid (MessageNotFound is Queue Storage's 404 code for a message)",
    },
    given: "queue+received",
    steps: [
      update("pop", 30, { status: 204, capture: { pop2: "header:x-ms-popreceipt" } }),
      remove("pop", {
        status: 404,
        code: "MessageNotFound",
        azurite: {
          status: 400,
          code: "PopReceiptMismatch",
          why: "the consumer's hold reads a stale receipt's 404 and 400 alike while the message is certainly hidden by it (src/queue/hold.ts)",
        },
      }),
      remove("pop2", { status: 204 }),
    ],
  },
  {
    name: "Delete Message is 204; deleting or updating it again is 404 MessageNotFound",
    service: "queue",
    features: ["queue-consumer"],
    source: { page: PAGE.queueErrorCodes, says: "MessageNotFound (404): the specified message does not exist" },
    given: "queue+received",
    steps: [
      remove("pop", { status: 204 }),
      remove("pop", { status: 404, code: "MessageNotFound" }),
      update("pop", 30, { status: 404, code: "MessageNotFound" }),
    ],
  },
  {
    name: "A message whose visibility timeout ended is received again with dequeue count 2 and a new receipt; the first receipt is then refused (update 400 PopReceiptMismatch)",
    service: "queue",
    features: ["queue-consumer"],
    source: {
      page: PAGE.getMessages,
      says: "a message becomes visible again when its visibility timeout ends, and the next Get Messages returns it with a new pop receipt and DequeueCount incremented; PopReceiptMismatch from Queue Storage error codes",
    },
    given: "queue+message",
    steps: [
      { req: "GET {q}/messages?numofmessages=1&visibilitytimeout=1", status: 200, capture: { pop: "xml:PopReceipt" } },
      {
        req: "GET {q}/messages?numofmessages=1&visibilitytimeout=30",
        waitMs: 2_000,
        status: 200,
        bodyHas: ["<MessageId>{id}</MessageId>", "<DequeueCount>2</DequeueCount>"],
        capture: { pop2: "xml:PopReceipt" },
      },
      update("pop", 30, { status: 400, code: "PopReceiptMismatch" }),
      remove("pop2", { status: 204 }),
    ],
  },
  {
    name: "Get Messages, Put Message, Update Message and Delete Message on a missing queue are 404 QueueNotFound",
    service: "queue",
    features: ["queue-consumer"],
    source: { page: PAGE.queueErrorCodes, says: "QueueNotFound (404): the specified queue does not exist" },
    given: "queue+received",
    steps: [
      { req: "GET {q}x/messages?numofmessages=1&visibilitytimeout=30", status: 404, code: "QueueNotFound" },
      { req: "POST {q}x/messages", body: message("hello"), status: 404, code: "QueueNotFound" },
      {
        req: "PUT {q}x/messages/{id}?popreceipt={pop:url}&visibilitytimeout=30",
        body: message("hello"),
        status: 404,
        code: "QueueNotFound",
      },
      { req: "DELETE {q}x/messages/{id}?popreceipt={pop:url}", status: 404, code: "QueueNotFound" },
    ],
  },
  {
    name: "A queue SAS with process and update rights: Get Messages 200, Update Message 204, Get Queue Properties 403 AuthorizationPermissionMismatch; a spoiled signature 403 AuthenticationFailed",
    service: "queue",
    features: ["queue-consumer"],
    source: {
      page: PAGE.serviceSas,
      says: "queue permissions: r (read metadata and properties, peek), a (add), u (update), p (process: get and delete messages); a request the SAS does not permit is 403 AuthorizationPermissionMismatch, a bad signature 403 AuthenticationFailed (Common REST API error codes)",
    },
    given: "queue+message",
    steps: [
      {
        req: "GET {q}/messages?numofmessages=1&visibilitytimeout=30",
        sas: { permissions: "pu" },
        status: 200,
        capture: { pop: "xml:PopReceipt" },
      },
      { ...update("pop", 30, { status: 204 }), sas: { permissions: "pu" } },
      {
        req: "GET {q}?comp=metadata",
        sas: { permissions: "pu" },
        status: 403,
        code: "AuthorizationPermissionMismatch",
      },
      {
        req: "GET {q}/messages?numofmessages=1&visibilitytimeout=30",
        sas: { permissions: "pu", badSignature: true },
        status: 403,
        code: "AuthenticationFailed",
      },
    ],
  },
  {
    name: "A queue SAS with add rights only: Put Message 201, Get Queue Properties 403 AuthorizationPermissionMismatch",
    service: "queue",
    features: ["queue-consumer"],
    source: {
      page: PAGE.serviceSas,
      says: "queue permission a (add) allows Put Message only; the rest is 403 AuthorizationPermissionMismatch",
    },
    given: "queue",
    steps: [
      { req: "POST {q}/messages?messagettl=60", body: message("poison"), sas: { permissions: "a" }, status: 201 },
      { req: "GET {q}?comp=metadata", sas: { permissions: "a" }, status: 403, code: "AuthorizationPermissionMismatch" },
    ],
  },
];

/** Queue behaviours. */
export const QUEUES: readonly Behaviour[] = [...recorded, ...pageBacked];
