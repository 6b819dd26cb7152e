/**
 * The Table service's limits on keys and entities, checked before any request so that a bad entity
 * is refused with a typed error that says what to fix, instead of a 400 from the service.
 *
 * Sources:
 * - "Understanding the Table service data model"
 *   (https://learn.microsoft.com/rest/api/storageservices/understanding-the-table-service-data-model):
 *   keys are checked by the table toolkit's `validateTableKey` (src/tables/validation.ts); at most
 *   255 properties including the three system ones;
 *   property names up to 255 characters; String and Binary values up to 64 KiB; 1 MiB per entity.
 * - The size rule the service applies to that 1 MiB ("How the size of an entity is calculated in
 *   Windows Azure table storage", Microsoft archive blog, 2011): 4 bytes + 2 bytes per character of
 *   PartitionKey and RowKey + for each property 8 bytes + 2 bytes per character of its name + the
 *   size of its value (String: 2 bytes per UTF-16 unit + 4; Binary: length + 4; DateTime, Double,
 *   Int64: 8; Int32: 4; Guid: 16; Boolean: 1).
 */
import { ENTITY_LIMITS, validateTableKey } from "../tables/internal.js";
import { TableEntityTooLargeError } from "./errors.js";

/** The service's limit on one entity, in bytes (1 MiB). */
export const MAX_ENTITY_SIZE_IN_BYTES = 1024 * 1024;
/** The service's limit on one String or Binary property value, in bytes (64 KiB). */
const MAX_PROPERTY_VALUE_IN_BYTES = ENTITY_LIMITS.valueInBytes;
/** Properties an entity may have besides PartitionKey, RowKey and Timestamp. */
const MAX_CUSTOM_PROPERTIES = ENTITY_LIMITS.ownProperties;

/**
 * Throws a {@link TableKeyError} unless `value` is a key the service accepts: the same rule as the
 * table toolkit's ({@link validateTableKey}: a string of at most 512 UTF-16 code units, i.e. 1 KiB,
 * without `/`, `\\`, `#`, `?` or control characters).
 */
export function checkTableKey(key: "partitionKey" | "rowKey", value: unknown): string {
  validateTableKey(value, key);
  return value;
}

/**
 * The size the service counts for an entity with these keys and properties (see the module notes).
 * Properties that are `null` or `undefined` are not stored and count nothing.
 */
export function estimateEntitySizeInBytes(
  partitionKey: string,
  rowKey: string,
  properties: Readonly<Record<string, unknown>>,
): number {
  let size = 4 + (partitionKey.length + rowKey.length) * 2;
  for (const [name, value] of Object.entries(properties)) {
    if (value === undefined || value === null) continue;
    size += 8 + name.length * 2 + valueSize(name, value);
  }
  return size;
}

/**
 * Checks that the service would store this entity: supported value types, at most 252 custom
 * properties, names up to 255 characters, values up to 64 KiB, 1 MiB in all (with `reserveInBytes`
 * kept free, e.g. for the write history the optimistic cell adds). Throws `TypeError` or
 * {@link TableEntityTooLargeError}.
 */
export function checkEntity(
  partitionKey: string,
  rowKey: string,
  properties: Readonly<Record<string, unknown>>,
  { reserveInBytes = 0, reservedProperties = 0 } = {},
): void {
  const names = Object.keys(properties).filter((n) => properties[n] !== undefined && properties[n] !== null);
  if (names.length + reservedProperties > MAX_CUSTOM_PROPERTIES) {
    throw new TableEntityTooLargeError(
      `The entity has ${names.length} properties; the service allows ${MAX_CUSTOM_PROPERTIES - reservedProperties} here. Split it over several entities.`,
      "TooManyProperties",
      names.length,
      MAX_CUSTOM_PROPERTIES - reservedProperties,
    );
  }
  for (const name of names) {
    if (name.length > 255)
      throw new RangeError(
        `Property name \`${name.slice(0, 40)}…\` is longer than the 255 characters the service allows.`,
      );
  }
  const size = estimateEntitySizeInBytes(partitionKey, rowKey, properties);
  if (size + reserveInBytes > MAX_ENTITY_SIZE_IN_BYTES) {
    throw new TableEntityTooLargeError(
      `The entity (partitionKey '${partitionKey}', rowKey '${rowKey}') is about ${size} bytes by the service's size rule` +
        `${reserveInBytes ? ` (plus ${reserveInBytes} reserved for the write history)` : ""}; the limit is 1 MiB. ` +
        "Move large values to a blob and keep its name in the entity.",
      "EntityTooLarge",
      size + reserveInBytes,
      MAX_ENTITY_SIZE_IN_BYTES,
    );
  }
}

function valueSize(name: string, value: unknown): number {
  if (typeof value === "string") return stringSize(name, value);
  if (typeof value === "boolean") return 1;
  if (typeof value === "number") return 8; // Int32 (4) or Double (8): count the larger
  if (typeof value === "bigint" || value instanceof Date) return 8;
  if (value instanceof Uint8Array) return binarySize(name, value.length);
  if (typeof value === "object" && value !== null && "type" in value && "value" in value) {
    const { type, value: inner } = value;
    switch (type) {
      case "String":
        return stringSize(name, String(inner));
      case "Binary":
        return binarySize(name, Buffer.byteLength(String(inner), "base64"));
      case "Boolean":
        return 1;
      case "Int32":
        return 4;
      case "Int64":
      case "Double":
      case "DateTime":
        return 8;
      case "Guid":
        return 16;
    }
  }
  throw new TypeError(
    `Property \`${name}\` holds ${Array.isArray(value) ? "an array" : typeof value}, which a table entity cannot store: ` +
      "use a string, number, boolean, Date, Uint8Array, bigint or an { value, type } EDM object (serialise nested data to a JSON string).",
  );
}

function stringSize(name: string, value: string): number {
  const bytes = value.length * 2;
  if (bytes > MAX_PROPERTY_VALUE_IN_BYTES) {
    throw new TableEntityTooLargeError(
      `Property \`${name}\` is a string of ${value.length} characters (${bytes} bytes as UTF-16); the service allows 64 KiB per value. Move it to a blob.`,
      "PropertyValueTooLarge",
      bytes,
      MAX_PROPERTY_VALUE_IN_BYTES,
    );
  }
  return bytes + 4;
}

function binarySize(name: string, length: number): number {
  if (length > MAX_PROPERTY_VALUE_IN_BYTES) {
    throw new TableEntityTooLargeError(
      `Property \`${name}\` is ${length} bytes of binary; the service allows 64 KiB per value. Move it to a blob.`,
      "PropertyValueTooLarge",
      length,
      MAX_PROPERTY_VALUE_IN_BYTES,
    );
  }
  return length + 4;
}
