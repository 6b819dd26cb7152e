/**
 * Tables: what the table entity cell, the table lock's fenced writes, the idempotency store and the
 * table toolkit send (entity reads, inserts, Replace/Merge/Delete `If-Match`, upserts, entity group
 * transactions, paged queries), and the answers they branch on: 404 ResourceNotFound (no entity) vs
 * TableNotFound (no table), 409 EntityAlreadyExists, 412 UpdateConditionNotSatisfied, and in a
 * transaction the failed operation's position ("1:The specified entity already exists.").
 *
 * Where the code travels matters: the Table service puts it in the JSON body only (no
 * `x-ms-error-code` header, in every recording), so a client that reads only the header finds no
 * code. Azurite adds the header; the suite reads the code from the body, as the library does.
 */
import {
  batch,
  batchInsert,
  batchReplace,
  ENTITY_INSERT,
  ENTITY_READ,
  ENTITY_WRITE,
  entity,
  entityPath,
  OLD_ENTITY_ETAG,
} from "./steps.js";
import { PAGE, RECORDINGS } from "./sources.js";
import type { Behaviour, Feature } from "./types.js";

const WRITERS: readonly Feature[] = ["optimistic", "table-lock", "idempotency", "tables"];
/** On Azurite only: the header the service does not send. */
const HEADER_TOO = (code: string) => ({
  answers: { "x-ms-error-code": code },
  why: "Azurite also sends the code as x-ms-error-code; the service sends it in the JSON body only, where the library reads it (errors.ts readRestError)",
});

const recorded: Behaviour[] = [
  {
    name: "Insert Entity of an entity that exists is 409 EntityAlreadyExists, the code in the JSON body only",
    service: "table",
    features: WRITERS,
    source: { recording: RECORDINGS.entityInsertConflict },
    given: "table+entity",
    steps: [
      {
        req: "POST {t}",
        headers: ENTITY_INSERT,
        body: entity("r", 2),
        status: 409,
        code: "EntityAlreadyExists",
        answers: { "x-ms-error-code": null },
        azurite: HEADER_TOO("EntityAlreadyExists"),
      },
    ],
  },
  {
    name: "Query Entity by keys of a missing entity is 404 ResourceNotFound, the code in the JSON body only",
    service: "table",
    features: WRITERS,
    source: { recording: RECORDINGS.entityGetNotExisting },
    given: "table",
    steps: [
      {
        req: `GET ${entityPath("missing")}`,
        headers: ENTITY_READ,
        status: 404,
        code: "ResourceNotFound",
        answers: { "x-ms-error-code": null },
        azurite: HEADER_TOO("ResourceNotFound"),
      },
    ],
  },
  {
    name: "Update Entity (Replace) If-Match an ETag the entity does not have is 412 UpdateConditionNotSatisfied",
    service: "table",
    features: WRITERS,
    source: { recording: RECORDINGS.entityUpdateIfDoesntMatch },
    given: "table+entity",
    steps: [
      {
        req: `PUT ${entityPath("r")}`,
        headers: { ...ENTITY_WRITE, "if-match": OLD_ENTITY_ETAG },
        body: entity("r", 2),
        status: 412,
        code: "UpdateConditionNotSatisfied",
      },
    ],
  },
  {
    // The recorded request sent `Accept: */*` and got the same code in an XML body; the library's
    // SDK sends `Accept: application/json`, which gets JSON (the Replace recording above).
    name: "Merge Entity (PATCH) If-Match an ETag the entity does not have is 412 UpdateConditionNotSatisfied",
    service: "table",
    features: WRITERS,
    source: { recording: RECORDINGS.entityMergeIfDoesntMatch },
    given: "table+entity",
    steps: [
      {
        req: `PATCH ${entityPath("r")}`,
        headers: { ...ENTITY_WRITE, "if-match": OLD_ENTITY_ETAG },
        body: entity("r", 2),
        status: 412,
        code: "UpdateConditionNotSatisfied",
      },
    ],
  },
  {
    name: "Update Entity If-Match * of a missing entity is 404 ResourceNotFound",
    service: "table",
    features: WRITERS,
    source: { recording: RECORDINGS.entityUpdateNotExisting },
    given: "table",
    steps: [
      {
        req: `PUT ${entityPath("missing")}`,
        headers: { ...ENTITY_WRITE, "if-match": "*" },
        body: entity("missing", 2),
        status: 404,
        code: "ResourceNotFound",
      },
    ],
  },
  {
    name: "An entity group transaction of inserts is 202 with one 204 answer and ETag per operation; creating an existing table is 409 TableAlreadyExists",
    service: "table",
    features: ["tables", "idempotency"],
    source: { recording: RECORDINGS.tableBatchCreate },
    given: "table",
    steps: [
      batch([batchInsert("1"), batchInsert("2"), batchInsert("3")], {
        status: 202,
        bodyHas: ["HTTP/1.1 204", "ETag: W/", "RowKey='3')"],
      }),
      {
        req: "POST Tables",
        headers: ENTITY_INSERT,
        body: '{"TableName":"{t}"}',
        status: 409,
        code: "TableAlreadyExists",
      },
    ],
  },
  {
    name: "An entity group transaction on a missing table is 202 with one 404 answer: TableNotFound at position 0",
    service: "table",
    features: ["tables", "idempotency"],
    source: { recording: RECORDINGS.tableBatchSubRequestError },
    given: "nothing",
    steps: [
      batch([batchInsert("1"), batchInsert("2"), batchInsert("3")], {
        status: 202,
        bodyHas: ["HTTP/1.1 404", '"code":"TableNotFound"', '"value":"0:The table specified does not exist.'],
      }),
    ],
  },
];

const pageBacked: Behaviour[] = [
  {
    name: "Insert Entity with Prefer: return-no-content is 204 with the ETag; Query Entity by keys is 200 with the same ETag; a Replace If-Match it is 204 with a new ETag; an upsert (no If-Match) is 204",
    service: "table",
    features: WRITERS,
    source: {
      page: PAGE.tableDataModel,
      says: "each entity has an ETag (its Timestamp) for optimistic concurrency; Insert Entity with return-no-content answers 204, Update Entity If-Match answers 204 with the new ETag, and without If-Match it inserts or replaces (Insert Or Replace Entity)",
    },
    given: "table+entity",
    steps: [
      {
        req: `GET ${entityPath("r")}`,
        headers: ENTITY_READ,
        status: 200,
        answers: { etag: "{etag}" },
        bodyHas: ['"value":1'],
      },
      {
        req: `PUT ${entityPath("r")}`,
        headers: { ...ENTITY_WRITE, "if-match": "{etag}" },
        body: entity("r", 2),
        status: 204,
        answers: { etag: "!{etag}" },
      },
      {
        req: `PUT ${entityPath("u")}`,
        headers: ENTITY_WRITE,
        body: entity("u", 1),
        status: 204,
        answers: { etag: "*" },
      },
    ],
  },
  {
    name: "Merge Entity of a missing entity is 404 ResourceNotFound; Delete Entity If-Match an old ETag is 412 UpdateConditionNotSatisfied and of a missing entity 404 ResourceNotFound",
    service: "table",
    features: WRITERS,
    source: {
      page: PAGE.tableErrorCodes,
      says: "UpdateConditionNotSatisfied (412): the update condition was not satisfied; ResourceNotFound (404) from the common codes; Delete Entity and Merge Entity require If-Match",
    },
    given: "table+entity",
    steps: [
      {
        req: `PATCH ${entityPath("missing")}`,
        headers: { ...ENTITY_WRITE, "if-match": "{etag}" },
        body: entity("missing", 2),
        status: 404,
        code: "ResourceNotFound",
      },
      {
        req: `DELETE ${entityPath("r")}`,
        headers: { accept: "application/json", "if-match": OLD_ENTITY_ETAG },
        status: 412,
        code: "UpdateConditionNotSatisfied",
      },
      { req: `DELETE ${entityPath("r")}`, headers: { accept: "application/json", "if-match": "{etag}" }, status: 204 },
      {
        req: `DELETE ${entityPath("r")}`,
        headers: { accept: "application/json", "if-match": "*" },
        status: 404,
        code: "ResourceNotFound",
      },
    ],
  },
  {
    name: "Query Entity by keys in a missing table is 404 TableNotFound; an empty PartitionKey is a valid key (404 ResourceNotFound when absent)",
    service: "table",
    features: ["idempotency", "optimistic", "queue-consumer"],
    source: {
      page: PAGE.tableErrorCodes,
      says: "TableNotFound (404): the table specified does not exist; the data model allows an empty string as PartitionKey and RowKey",
    },
    given: "table",
    steps: [
      { req: `GET {t}x(PartitionKey='p',RowKey='r')`, headers: ENTITY_READ, status: 404, code: "TableNotFound" },
      { req: `GET ${entityPath("inbox:", "")}`, headers: ENTITY_READ, status: 404, code: "ResourceNotFound" },
    ],
  },
  {
    name: 'An entity group transaction whose insert at position 1 meets an existing entity is 202 with one 409 answer (EntityAlreadyExists, "1:"), and applies nothing',
    service: "table",
    features: ["tables", "idempotency", "table-lock"],
    source: {
      page: PAGE.entityGroupTransactions,
      says: "a failed operation fails the whole change set; the response carries the one failed operation's status and an error whose message starts with its index (sample: 1:The specified entity already exists.)",
    },
    given: "table+entity",
    steps: [
      batch([batchInsert("new"), batchInsert("r")], {
        status: 202,
        bodyHas: ["HTTP/1.1 409", '"code":"EntityAlreadyExists"', '"value":"1:'],
      }),
      { req: `GET ${entityPath("new")}`, headers: ENTITY_READ, status: 404, code: "ResourceNotFound" },
    ],
  },
  {
    name: 'An entity group transaction whose Replace at position 1 is If-Match an old ETag is 202 with one 412 answer (UpdateConditionNotSatisfied, "1:"), and applies nothing',
    service: "table",
    features: ["tables", "idempotency"],
    source: {
      page: PAGE.entityGroupTransactions,
      says: "a failed operation fails the whole change set; the error message starts with the failed operation's index",
    },
    given: "table+entity",
    steps: [
      batch([batchInsert("new"), batchReplace("r", OLD_ENTITY_ETAG)], {
        status: 202,
        bodyHas: ["HTTP/1.1 412", '"code":"UpdateConditionNotSatisfied"', '"value":"1:'],
      }),
      { req: `GET ${entityPath("new")}`, headers: ENTITY_READ, status: 404, code: "ResourceNotFound" },
    ],
  },
  {
    name: "Query Entities with $top gives x-ms-continuation-NextPartitionKey and NextRowKey while more entities match",
    service: "table",
    features: ["idempotency", "tables"],
    source: {
      page: PAGE.queryTimeoutAndPagination,
      says: "a query that returns fewer entities than match includes the continuation headers x-ms-continuation-NextPartitionKey and x-ms-continuation-NextRowKey",
    },
    given: "table+entity",
    steps: [
      { req: "POST {t}", headers: ENTITY_INSERT, body: entity("s", 1), status: 204 },
      {
        req: "GET {t}()?$top=1&$filter=PartitionKey%20eq%20'p'",
        headers: ENTITY_READ,
        status: 200,
        answers: { "x-ms-continuation-nextpartitionkey": "*", "x-ms-continuation-nextrowkey": "*" },
      },
    ],
  },
];

const unbacked: Behaviour[] = [
  {
    name: "An entity group transaction with a table-scoped SAS (add, update, delete, query) is accepted like the single-entity writes it allows",
    service: "table",
    features: ["idempotency", "tables"],
    source: {
      unbacked:
        "no recording has a table-scoped SAS on $batch (the SDK's recorded $batch with a SAS connection string does not say which SAS), and the Create service SAS page does not name $batch; the expectation is the one the consumer's least-privilege docs rely on, and the live suite checks it",
    },
    given: "table",
    steps: [
      { req: "POST {t}", headers: ENTITY_INSERT, body: entity("single", 1), sas: { permissions: "raud" }, status: 204 },
      {
        ...batch([batchInsert("1"), batchInsert("2")], { status: 202, bodyHas: ["HTTP/1.1 204"] }),
        sas: { permissions: "raud" },
        azurite: {
          status: 403,
          code: "AuthorizationFailure",
          bodyHas: ["<Code>AuthorizationFailure</Code>"],
          why: "Azurite 3.37 refuses a table-scoped SAS on $batch (XML error, x-ms-error-code header); the tests that send transactions with one use an account SAS or the key on Azurite",
        },
      },
    ],
  },
];

/** Table behaviours. */
export const TABLES: readonly Behaviour[] = [...recorded, ...pageBacked, ...unbacked];
