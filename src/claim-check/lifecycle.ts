/**
 * The end of a payload: deleted once a copy of its message was settled, kept when its message goes
 * to the poison queue. Both are conditional on the blob's ETag, read just before, so that neither
 * undoes the other: a payload marked for the poison queue between the read and the delete is not
 * deleted (412), and the mark is written over the version it read.
 */
import { serviceCodeOf, statusOf } from "../errors.js";
import { withTimeLimit } from "../internal/time-limit.js";
import { sdkTracing } from "../observability/scope.js";
import { blobEnvelopeOf } from "../queue/internal.js";
import type { ClaimCheckCallOptions, ClaimCheckSettings } from "./options.js";
import { PAYLOAD_METADATA } from "./payload.js";
import { limitOf } from "./read.js";

/**
 * What {@link ClaimCheck.deletePayload} did: `deleted` (or already gone), `kept` (its message was
 * poisoned, or it changed since), or `none` (the message has no payload blob).
 */
export type PayloadDeletion = "deleted" | "kept" | "none";

/** Deletes the payload of a settled message, unless it is kept for the poison queue. */
export async function deletePayload(
  settings: ClaimCheckSettings,
  messageText: string,
  options: ClaimCheckCallOptions,
): Promise<PayloadDeletion> {
  const envelope = blobEnvelopeOf(messageText);
  if (!envelope || envelope.container !== settings.container.containerName) return "none";
  const blob = settings.container.getBlobClient(envelope.blob);
  const limit = limitOf(settings, options);
  const properties = await withTimeLimit(
    `read the claim-check payload '${envelope.blob}''s properties`,
    limit,
    options.abortSignal,
    (abortSignal) => blob.getProperties({ abortSignal, tracingOptions: sdkTracing() }),
  ).catch((error: unknown) => {
    if (statusOf(error) === 404) return undefined;
    throw error;
  });
  if (!properties) return "deleted";
  if (properties.metadata?.[PAYLOAD_METADATA.poisonedOn] !== undefined) return "kept";
  try {
    await withTimeLimit(
      `delete the claim-check payload '${envelope.blob}'`,
      limit,
      options.abortSignal,
      (abortSignal) =>
        blob.delete({ conditions: { ifMatch: properties.etag! }, abortSignal, tracingOptions: sdkTracing() }),
    );
    return "deleted";
  } catch (error) {
    // 404: gone already (an earlier try of ours whose answer was lost); 412: changed since (marked for the poison queue).
    if (statusOf(error) === 404) return "deleted";
    if (statusOf(error) === 412) return "kept";
    throw error;
  }
}

/**
 * Marks the payload of a message about to be poisoned so that nothing deletes it (`poisonedon` in its
 * metadata); resolves with the blob's name, or undefined when the message has no payload blob (or
 * it is gone).
 */
export async function keepPayload(
  settings: ClaimCheckSettings,
  messageText: string,
  options: ClaimCheckCallOptions,
): Promise<string | undefined> {
  const envelope = blobEnvelopeOf(messageText);
  if (!envelope || envelope.container !== settings.container.containerName) return undefined;
  const blob = settings.container.getBlobClient(envelope.blob);
  const limit = limitOf(settings, options);
  for (let tries = 1; ; tries++) {
    const properties = await withTimeLimit(
      `read the claim-check payload '${envelope.blob}''s properties`,
      limit,
      options.abortSignal,
      (abortSignal) => blob.getProperties({ abortSignal, tracingOptions: sdkTracing() }),
    ).catch((error: unknown) => {
      if (statusOf(error) === 404) return undefined;
      throw error;
    });
    if (!properties) return undefined;
    const metadata = properties.metadata ?? {};
    if (metadata[PAYLOAD_METADATA.poisonedOn] !== undefined) return envelope.blob;
    try {
      await withTimeLimit(
        `keep the claim-check payload '${envelope.blob}' for the poison queue`,
        limit,
        options.abortSignal,
        (abortSignal) =>
          blob.setMetadata(
            { ...metadata, [PAYLOAD_METADATA.poisonedOn]: new Date().toISOString() },
            { conditions: { ifMatch: properties.etag! }, abortSignal, tracingOptions: sdkTracing() },
          ),
      );
      return envelope.blob;
    } catch (error) {
      // Changed since the read (a try of ours whose answer was lost, or a concurrent mark): read again.
      if (statusOf(error) === 412 && tries < 3) continue;
      if (statusOf(error) === 404 && serviceCodeOf(error) === "BlobNotFound") return undefined;
      throw error;
    }
  }
}
