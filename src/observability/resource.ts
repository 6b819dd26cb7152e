/**
 * What an operation is about, as structured span attributes (issue 23): the kind of resource, its
 * container (or share, or table), its name (or its keys), and the account's host, rather than one
 * free-text `asc.target` a backend can only search as text. A dashboard filters the lock waits of
 * one container by `asc.resource.container`, or every table entity by `asc.resource.kind`.
 *
 * The library's own cells and leasables register what they are about when they are made
 * ({@link describeResource}); a cell or leasable of the application's own has only its
 * `description`, which then goes to `asc.resource.description`.
 */
import type { Attributes } from "@opentelemetry/api";
import { ATTR } from "./names.js";

/** The kinds of resource the library's operations are about. */
type ResourceKind =
  | "blob"
  | "container"
  | "container_metadata"
  | "file"
  | "share"
  | "table"
  | "table_entity"
  | "queue"
  | "semaphore"
  | "schedule";

/** One resource, in parts. */
export interface StorageResource {
  readonly kind: ResourceKind;
  /** The container, share, table or queue (the resource itself for a container, share, table or queue). */
  readonly container: string;
  /**
   * The blob's name, the file's path in its share, or a semaphore's or a schedule's name; absent for
   * a container, share, table or queue.
   */
  readonly name?: string | undefined;
  /** A table entity's keys. */
  readonly partitionKey?: string | undefined;
  readonly rowKey?: string | undefined;
  /** The client's URL: only its host is kept (`server.address`), never its path or query (a SAS). */
  readonly url?: string | undefined;
}

const registered = new WeakMap<object, Attributes>();

/** Registers what `target` (a cell, a leasable) is about; answers `target`. */
export function describeResource<T extends object>(target: T, resource: StorageResource): T {
  registered.set(target, resourceAttributes(resource));
  return target;
}

/** The attributes of what `target` is about: registered ones, else its description. */
export function resourceOf(target: object & { readonly description?: unknown }): Attributes {
  const attributes = registered.get(target);
  if (attributes) return attributes;
  const { description } = target;
  return typeof description === "string" ? { [ATTR.resourceDescription]: description } : {};
}

/** The attributes of `resource`. */
export function resourceAttributes(resource: StorageResource): Attributes {
  const host = hostOf(resource.url);
  return {
    [ATTR.resourceKind]: resource.kind,
    [ATTR.resourceContainer]: resource.container,
    ...(resource.name === undefined ? {} : { [ATTR.resourceName]: resource.name }),
    ...(resource.partitionKey === undefined ? {} : { [ATTR.resourcePartitionKey]: resource.partitionKey }),
    ...(resource.rowKey === undefined ? {} : { [ATTR.resourceRowKey]: resource.rowKey }),
    ...(host === undefined ? {} : { [ATTR.serverAddress]: host }),
  };
}

function hostOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    return new URL(url).hostname || undefined;
  } catch {
    return undefined;
  }
}
