/**
 * The recorded sessions of the real service that back the facts, each read by hand from the Azure
 * SDKs' repositories (test recordings made against real accounts; authorisation sanitised, lease ids
 * sometimes too), and the REST reference pages that back the others. Only status codes, error
 * codes and header names and values are taken from them, as test data.
 */
import type { Recording } from "./types.js";

const JS = "Azure/azure-sdk-for-js";
const PY = "Azure/azure-sdk-for-python";
const JS_BLOB = "sdk/storage/storage-blob/recordings/node";
const JS_QUEUE = "sdk/storage/storage-queue/recordings/node";
const JS_TABLES = "sdk/tables/data-tables/recordings/node";
const PY_BLOB = "sdk/storage/azure-storage-blob/tests/recordings";
const PY_TABLES = "sdk/tables/azure-data-tables/tests/recordings";

/** Every recording the facts cite, by a short name. */
export const RECORDINGS = {
  // Blob (service versions 2018-03-28 to 2021-12-02)
  blobBreakLease: {
    repo: JS,
    path: `${JS_BLOB}/leaseclient_from_blob/recording_breaklease.json`,
    commit: "9b6751bcfbc30a2cb29366e2841fcdcb0da1ad57",
  },
  blobRenewLease: {
    repo: JS,
    path: `${JS_BLOB}/leaseclient_from_blob/recording_renewlease.json`,
    commit: "96688f93da3bfd202f9a04aebe59abe1e0d60974",
  },
  containerChangeLease: {
    repo: JS,
    path: `${JS_BLOB}/leaseclient_from_container/recording_changelease.json`,
    commit: "663025d5584143520fe85922e66c20fe62532bed",
  },
  blobExistsFalse: {
    repo: JS,
    path: `${JS_BLOB}/blobclient/recording_exists_returns_false_on_nonexisting_blob.json`,
    commit: "397880acd536417168ec20c9a645a069ed329c47",
  },
  blobAcquireTwiceFails: {
    repo: PY,
    path: `${PY_BLOB}/test_common_blob.test_lease_blob_acquire_twice_fails.yaml`,
    commit: "2f57eef374995c4effaf3b1079e22d028ff93a03",
  },
  blobLeaseWithDuration: {
    repo: PY,
    path: `${PY_BLOB}/test_common_blob.test_lease_blob_with_duration.yaml`,
    commit: "228203ab2dc04947a2caa6eccea9cfac39ab0cd5",
  },
  containerLeaseTwice: {
    repo: PY,
    path: `${PY_BLOB}/test_container.test_lease_container_twice.yaml`,
    commit: "196eb84318f727151bc79a179b5486c1ea7f1a92",
  },
  containerBreakReleasedLeaseFails: {
    repo: PY,
    path: `${PY_BLOB}/test_container.test_lease_container_break_released_lease_fails.yaml`,
    commit: "196eb84318f727151bc79a179b5486c1ea7f1a92",
  },
  containerLeaseWithDuration: {
    repo: PY,
    path: `${PY_BLOB}/test_container.test_lease_container_with_duration.yaml`,
    commit: "021e35db5ea1e270781b64d5dae7158b3df22b49",
  },
  putBlobIfMatchFail: {
    repo: PY,
    path: `${PY_BLOB}/test_blob_access_conditions.test_put_blob_with_if_match_fail.yaml`,
    commit: "06b0d02bed7b6db4d2b7251a334c651d66d96e5e",
  },
  getBlobIfNoneMatchFail: {
    repo: PY,
    path: `${PY_BLOB}/test_blob_access_conditions.test_get_blob_with_if_none_match_fail.yaml`,
    commit: "24f40e3c192f10178a69ae6df0e0b9a309fa4531",
  },
  // Queue (service version 2021-10-04)
  queueCreateIfNotExists: {
    repo: JS,
    path: `${JS_QUEUE}/queueclient/recording_createifnotexists.json`,
    commit: "0b90fc94f66ca79f7386768771bbb56bc232adf7",
  },
  queueGetPropertiesNegative: {
    repo: JS,
    path: `${JS_QUEUE}/queueclient/recording_getproperties_negative.json`,
    commit: "0b90fc94f66ca79f7386768771bbb56bc232adf7",
  },
  queueEnqueueDequeue: {
    repo: JS,
    path: `${JS_QUEUE}/queueclient_message_methods/recording_enqueue_peek_dequeue_and_clear_message_with_all_parameters.json`,
    commit: "0b90fc94f66ca79f7386768771bbb56bc232adf7",
  },
  queueUpdateMessage: {
    repo: JS,
    path: `${JS_QUEUE}/queueclient_messageid_methods/recording_update_and_delete_message_with_all_parameters.json`,
    commit: "0b90fc94f66ca79f7386768771bbb56bc232adf7",
  },
  queueDeleteMessageNegative: {
    repo: JS,
    path: `${JS_QUEUE}/queueclient_messageid_methods/recording_delete_message_negative.json`,
    commit: "0b90fc94f66ca79f7386768771bbb56bc232adf7",
  },
  // Table (service versions 2019-02-02 and 2019-07-07)
  tableBatchSubRequestError: {
    repo: JS,
    path: `${JS_TABLES}/handle_suberror/recording_should_handle_sub_request_error.json`,
    commit: "bd483a4aab6f295eb6f34ac6bff99fcdf8cc649a",
  },
  tableBatchCreate: {
    repo: JS,
    path: `${JS_TABLES}/batch_operations_sasconnectionstring/recording_should_send_a_set_of_create_batch_operations.js`,
    commit: "0cd94a01fd655af049cae15c39b9a6f05ec1c023",
  },
  entityInsertConflict: {
    repo: PY,
    path: `${PY_TABLES}/test_table_entity.test_insert_entity_conflict.yaml`,
    commit: "086275c67ed55ceca5762c94f88c0a0d36f8c9ce",
  },
  entityMergeIfDoesntMatch: {
    repo: PY,
    path: `${PY_TABLES}/test_table_entity.test_update_entity_with_if_doesnt_match.yaml`,
    commit: "086275c67ed55ceca5762c94f88c0a0d36f8c9ce",
  },
  entityGetNotExisting: {
    repo: PY,
    path: `${PY_TABLES}/test_table_entity.pyTestTableEntitytest_get_entity_not_existing.json`,
    commit: "256d6af519c44f25f515bc9918528f92ef0db77a",
  },
  entityUpdateIfDoesntMatch: {
    repo: PY,
    path: `${PY_TABLES}/test_table_entity.pyTestTableEntitytest_update_entity_with_if_doesnt_match.json`,
    commit: "256d6af519c44f25f515bc9918528f92ef0db77a",
  },
  entityUpdateNotExisting: {
    repo: PY,
    path: `${PY_TABLES}/test_table_entity.pyTestTableEntitytest_update_entity_not_existing.json`,
    commit: "1fc8ae668c7915576fd240b0fe7d007a73a84aff",
  },
} satisfies Record<string, Recording>;

const PAGES = "https://learn.microsoft.com/rest/api/storageservices";

/** The REST reference pages the facts cite. */
export const PAGE = {
  leaseBlob: `${PAGES}/lease-blob`,
  leaseContainer: `${PAGES}/lease-container`,
  blobErrorCodes: `${PAGES}/blob-service-error-codes`,
  conditionalHeaders: `${PAGES}/specifying-conditional-headers-for-blob-service-operations`,
  setContainerMetadata: `${PAGES}/set-container-metadata`,
  listBlobs: `${PAGES}/list-blobs`,
  queueErrorCodes: `${PAGES}/queue-service-error-codes`,
  updateMessage: `${PAGES}/update-message`,
  deleteMessage: `${PAGES}/delete-message2`,
  getMessages: `${PAGES}/get-messages`,
  serviceSas: `${PAGES}/create-service-sas`,
  commonErrorCodes: `${PAGES}/common-rest-api-error-codes`,
  tableErrorCodes: `${PAGES}/table-service-error-codes`,
  entityGroupTransactions: `${PAGES}/performing-entity-group-transactions`,
  queryTimeoutAndPagination: `${PAGES}/query-timeout-and-pagination`,
  tableDataModel: `${PAGES}/understanding-the-table-service-data-model`,
  deleteEntity: `${PAGES}/delete-entity1`,
  mergeEntity: `${PAGES}/merge-entity`,
} as const;
