/**
 * Message codecs: how a queue message's text becomes the value a handler sees, and back.
 *
 * Azure Queue Storage stores text (up to 64 KiB) inside an XML body. `@azure/storage-queue` for
 * JavaScript sends `messageText` exactly as given and has no `messageEncoding` option (the .NET
 * client's `QueueMessageEncoding.Base64` and the Azure Functions queue trigger use base64), so a
 * consumer must know which of the three a producer used: plain text, base64, or JSON (in plain
 * text, or inside base64 as .NET and Functions producers write it).
 *
 * A body that does not decode throws {@link MessageDecodeError}; the consumer then moves the
 * message to the poison queue with the error's message as the reason, because decoding again
 * cannot succeed.
 */
import { MessageDecodeError } from "./errors.js";
import { describeError } from "../internal/describe-error.js";

/** Turns message text into a value and back. */
export interface MessageCodec<T> {
  /** A short name for errors and logs (`"text"`, `"base64"`, `"json"`, `"base64-json"`). */
  readonly name: string;
  /** Decodes a received message's text; throws {@link MessageDecodeError} when it cannot. */
  decode(messageText: string): T;
  /** Encodes a value into message text, for `queueClient.sendMessage(codec.encode(value))`. */
  encode(value: T): string;
}

/**
 * The message text as it is (the default).
 *
 * @example
 * ```ts
 * import { textCodec } from "azure-storage-concurrency/queue";
 *
 * textCodec.decode("hello"); // "hello"
 * ```
 */
export const textCodec: MessageCodec<string> = Object.freeze({
  name: "text",
  decode: (messageText: string) => messageText,
  encode: (value: string) => value,
});

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Base64 text decoded to bytes (the encoding of .NET's `QueueMessageEncoding.Base64` and of the
 * Azure Functions queue trigger). Text that is not strict base64 is rejected rather than decoded
 * leniently, so that a plain-text body sent by mistake does not turn into garbage bytes.
 *
 * @example
 * ```ts
 * import { base64Codec } from "azure-storage-concurrency/queue";
 *
 * base64Codec.decode("aGk="); // Buffer "hi"
 * base64Codec.encode(Buffer.from("hi")); // "aGk="
 * ```
 */
export const base64Codec: MessageCodec<Buffer> = Object.freeze({
  name: "base64",
  decode(messageText: string): Buffer {
    const compact = messageText.replace(/\s+/g, "");
    if (!BASE64.test(compact)) {
      throw new MessageDecodeError(`The message body is not valid base64 (${describeText(messageText)}).`, {
        codec: "base64",
      });
    }
    return Buffer.from(compact, "base64");
  },
  encode: (value: Buffer) => Buffer.from(value).toString("base64"),
});

/** Options for {@link jsonCodec}. */
export interface JsonCodecOptions<T> {
  /**
   * The JSON is inside base64, as .NET producers with `QueueMessageEncoding.Base64` and Azure
   * Functions output bindings write it.
   * @default false
   */
  readonly base64?: boolean;
  /**
   * Checks the parsed value and returns it typed (a schema library's `parse`, or a type guard).
   * Throw to reject it: the message goes to the poison queue with the thrown error's message.
   */
  readonly validate?: (value: unknown) => T;
}

/**
 * JSON message bodies, optionally inside base64, optionally checked by `validate`.
 *
 * @example
 * ```ts
 * import { jsonCodec } from "azure-storage-concurrency/queue";
 *
 * interface Order { orderId: string; amount: number }
 * const orders = jsonCodec<Order>({
 *   validate: (value) => {
 *     const order = value as Order;
 *     if (typeof order?.orderId !== "string") throw new Error("orderId is missing");
 *     return order;
 *   },
 * });
 * orders.decode('{"orderId":"o-1","amount":3}'); // { orderId: "o-1", amount: 3 }
 * ```
 */
export function jsonCodec<T = unknown>(options: JsonCodecOptions<T> = {}): MessageCodec<T> {
  if (options.validate !== undefined && typeof options.validate !== "function") {
    throw new TypeError("`validate` must be a function.");
  }
  const base64 = options.base64 === true;
  const name = base64 ? "base64-json" : "json";
  return Object.freeze({
    name,
    decode(messageText: string): T {
      const json = base64 ? base64Codec.decode(messageText).toString("utf8") : messageText;
      let parsed: unknown;
      try {
        parsed = JSON.parse(json);
      } catch (error) {
        throw new MessageDecodeError(
          `The message body is not valid JSON${base64 ? " inside base64" : ""}: ${describeError(error)} (${describeText(json)}).`,
          { codec: name, cause: error },
        );
      }
      if (!options.validate) return parsed as T;
      try {
        return options.validate(parsed);
      } catch (error) {
        const why = describeError(error);
        throw new MessageDecodeError(`The message body was rejected by the codec's validate(): ${why}`, {
          codec: name,
          cause: error,
        });
      }
    },
    encode(value: T): string {
      const json = JSON.stringify(value);
      if (json === undefined) throw new TypeError("The value cannot be encoded as JSON.");
      return base64 ? Buffer.from(json, "utf8").toString("base64") : json;
    },
  });
}

function describeText(text: string): string {
  const shown = text.length > 40 ? `${text.slice(0, 40)}…` : text;
  return `${text.length} characters: ${JSON.stringify(shown)}`;
}
