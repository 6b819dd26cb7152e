/**
 * A table entity as a versioned cell: the value is the entity's properties (without PartitionKey,
 * RowKey, Timestamp and the ETag, which the cell manages).
 *
 * The Table service is optimistic by default (source documents: Update and Merge Entity require
 * If-Match; `*` opts out): a write is Update Entity (`Replace`) or Merge Entity with the ETag read,
 * or Insert Entity when the entity does not exist (409 EntityAlreadyExists when someone inserted it
 * first). The write history is one more string property, {@link OPTIMISTIC_LOG_KEY}.
 *
 * Keys, property types and sizes are checked before any request (see `table-entity-rules.ts`).
 * Errors of `@azure/data-tables` carry no `code`; they are read through `statusOf`/`serviceCodeOf`.
 */
import { sdkTracing } from "../observability/scope.js";
import type { TableClient, UpdateMode } from "@azure/data-tables";
import { serviceCodeOf, statusOf } from "../errors.js";
import { countSends, OPTIMISTIC_LOG_KEY, type VersionedCell } from "./cell.js";
import { checkEntity, checkTableKey } from "./table-entity-rules.js";
import { MAX_LOG_LENGTH } from "./write-log.js";
import { describeResource } from "../observability/resource.js";

/** Options for {@link tableEntityCell}. */
export interface TableEntityCellOptions {
  /**
   * How a write applies the value: `"Replace"` (Update Entity: properties left out are removed) or
   * `"Merge"` (Merge Entity: properties left out are kept; a property cannot be removed).
   * @default "Replace"
   */
  readonly mode?: UpdateMode;
}

type Properties = Record<string, unknown>;

const MANAGED = new Set(["partitionKey", "rowKey", "etag", "timestamp", "odata.metadata"]);

/** Bytes the write history may take in an entity, by the service's size rule (name + UTF-16 value). */
const LOG_RESERVE_IN_BYTES = 8 + OPTIMISTIC_LOG_KEY.length * 2 + MAX_LOG_LENGTH * 2 + 4;

/**
 * One table entity, addressed by its keys. Keys the service would refuse (`/`, `\`, `#`, `?`,
 * control characters, over 512 UTF-16 code units) throw a {@link tables!TableKeyError} here, before any request; an entity over
 * 1 MiB (by the service's size rule) is refused with {@link TableEntityTooLargeError} when written.
 *
 * @example
 * ```ts
 * import { TableClient } from "@azure/data-tables";
 * import { optimisticUpdate, tableEntityCell } from "azure-storage-concurrency/optimistic";
 *
 * const customers = TableClient.fromConnectionString(process.env.AZURE_STORAGE_CONNECTION_STRING!, "customers");
 * const customer = tableEntityCell<{ email: string }>(customers, "contoso", "42");
 * await optimisticUpdate(customer, (current) => ({ ...current, email: "updatedEmail@contoso.org" }));
 * ```
 */
export function tableEntityCell<T extends object = Record<string, unknown>>(
  table: TableClient,
  partitionKey: string,
  rowKey: string,
  options: TableEntityCellOptions = {},
): VersionedCell<T, Record<string, unknown>> {
  if (typeof table?.getEntity !== "function" || typeof table.updateEntity !== "function") {
    throw new TypeError("`table` must be a TableClient from @azure/data-tables.");
  }
  checkTableKey("partitionKey", partitionKey);
  checkTableKey("rowKey", rowKey);
  const mode = options.mode ?? "Replace";
  if (mode !== "Replace" && mode !== "Merge")
    throw new TypeError(`\`mode\` must be "Replace" or "Merge", got ${JSON.stringify(mode)}.`);
  const description = `entity (partitionKey '${partitionKey}', rowKey '${rowKey}') in table '${table.tableName}'`;
  const entity = (content: Properties, log: string) => ({
    ...content,
    partitionKey,
    rowKey,
    [OPTIMISTIC_LOG_KEY]: log,
  });

  return describeResource(
    {
      // The mode is part of the identity: callers sharing a round write through one cell. The keys
      // as JSON: any character may appear in them, so a plain separator would let (pk "a|b", rk "c")
      // and (pk "a", rk "b|c") share one key, one cache entry and one round.
      key: `table-entity-${mode}|${table.url.split("?")[0]}/${table.tableName}|${JSON.stringify([partitionKey, rowKey])}`,
      description,

      async read({ abortSignal }) {
        let found: Properties;
        try {
          found = await table.getEntity<Properties>(partitionKey, rowKey, {
            abortSignal,
            tracingOptions: sdkTracing(),
          });
        } catch (error) {
          if (statusOf(error) === 404 && serviceCodeOf(error) === "ResourceNotFound") return undefined;
          throw error;
        }
        const content: Properties = {};
        for (const [name, value] of Object.entries(found)) {
          if (!MANAGED.has(name) && name !== OPTIMISTIC_LOG_KEY) content[name] = value;
        }
        const log = found[OPTIMISTIC_LOG_KEY];
        return { content, etag: found["etag"] as string, log: typeof log === "string" ? log : undefined };
      },

      async write(content, { abortSignal, condition, log, onSend }) {
        const stored = entity(content, log);
        const options = {
          abortSignal,
          tracingOptions: sdkTracing(),
          requestOptions: { onUploadProgress: countSends(onSend) },
        };
        if ("ifNoneMatch" in condition) return (await table.createEntity(stored, options)).etag!;
        if ("ifMatch" in condition)
          return (await table.updateEntity(stored, mode, { ...options, etag: condition.ifMatch })).etag!;
        if (condition.mustExist) return (await table.updateEntity(stored, mode, { ...options, etag: "*" })).etag!;
        return (await table.upsertEntity(stored, mode, options)).etag!;
      },

      decode: (content) => copyProperties(content) as T,

      encode(value) {
        if (typeof value !== "object" || value === null || Array.isArray(value)) {
          throw new TypeError(
            `The value for ${description} must be an object of properties, got ${Array.isArray(value) ? "an array" : typeof value}.`,
          );
        }
        const properties: Properties = {};
        for (const [name, property] of Object.entries(value)) {
          if (name === OPTIMISTIC_LOG_KEY) {
            throw new TypeError(
              `\`${OPTIMISTIC_LOG_KEY}\` is reserved for the optimistic write history; rename that property.`,
            );
          }
          if ((name === "partitionKey" && property !== partitionKey) || (name === "rowKey" && property !== rowKey)) {
            throw new TypeError(
              `The value for ${description} changes \`${name}\`; an update cannot move an entity to other keys.`,
            );
          }
          if (MANAGED.has(name) || property === undefined || property === null) continue;
          properties[name] = property;
        }
        checkEntity(partitionKey, rowKey, properties, { reserveInBytes: LOG_RESERVE_IN_BYTES, reservedProperties: 1 });
        return copyProperties(properties);
      },

      ...(mode === "Merge"
        ? { mergeWrite: (stored: Properties, written: Properties) => ({ ...stored, ...written }) }
        : {}),
    },
    { kind: "table_entity", container: table.tableName, partitionKey, rowKey, url: table.url },
  );
}

/**
 * A deep enough copy of a property bag: Dates, byte arrays and EDM objects are copied, so that no
 * caller can change another's value (or the cached one). Not `structuredClone`, whose copies belong
 * to another realm under some test runners and then fail the SDK's `instanceof` checks.
 */
function copyProperties(properties: Properties): Properties {
  const copy: Properties = {};
  for (const [name, value] of Object.entries(properties)) {
    if (value instanceof Date) copy[name] = new Date(value.getTime());
    else if (value instanceof Uint8Array) copy[name] = new Uint8Array(value);
    else if (typeof value === "object" && value !== null) copy[name] = { ...value };
    else copy[name] = value;
  }
  return copy;
}
