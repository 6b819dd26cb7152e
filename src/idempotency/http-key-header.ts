/**
 * Reading the `Idempotency-Key` request header of draft-ietf-httpapi-idempotency-key-header-06
 * section 2.1 (https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/): an
 * Item Structured Header Field whose value is a String (RFC 8941 section 3.3.3), so
 * `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`. Many clients (Stripe's SDKs among them)
 * send the key unquoted; that form is accepted too, as one token of visible ASCII characters
 * without quotes, commas, semicolons or spaces. Two header lines (joined with a comma by Node.js and
 * by `Headers`) are refused: a request has one key.
 */

/** What the header said: no key, a key, or something that is not one (`why`, for the 400 answer). */
type ParsedIdempotencyKey =
  | { readonly kind: "missing" }
  | { readonly kind: "key"; readonly key: string }
  | { readonly kind: "invalid"; readonly why: string };

/** The longest key accepted by default (Stripe's limit). */
export const DEFAULT_MAX_KEY_LENGTH = 255;

/** Parses the header's value (`undefined` or `null`: absent; an array: several header lines). */
export function parseIdempotencyKey(
  value: string | readonly string[] | null | undefined,
  maxKeyLength: number = DEFAULT_MAX_KEY_LENGTH,
): ParsedIdempotencyKey {
  if (value === undefined || value === null) return { kind: "missing" };
  if (typeof value !== "string") {
    if (value.length === 0) return { kind: "missing" };
    if (value.length > 1) return { kind: "invalid", why: "the request has several Idempotency-Key header lines" };
    value = value[0]!;
  }
  const text = value.trim();
  if (text === "") return { kind: "invalid", why: "the Idempotency-Key header is empty" };
  const parsed = text.startsWith('"') ? parseString(text) : parseToken(text);
  if (parsed.kind !== "key") return parsed;
  if (parsed.key.length === 0) return { kind: "invalid", why: "the idempotency key is empty" };
  if (parsed.key.length > maxKeyLength) {
    return {
      kind: "invalid",
      why: `the idempotency key is ${parsed.key.length} characters long; at most ${maxKeyLength} are accepted`,
    };
  }
  return parsed;
}

/** An RFC 8941 String: printable ASCII between double quotes, `\"` and `\\` escaped, nothing after it. */
function parseString(text: string): ParsedIdempotencyKey {
  let key = "";
  for (let i = 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === "\\") {
      const next = text[i + 1];
      if (next !== '"' && next !== "\\")
        return { kind: "invalid", why: 'the quoted key has an escape other than \\" or \\\\' };
      key += next;
      i++;
    } else if (c === '"') {
      if (i !== text.length - 1)
        return {
          kind: "invalid",
          why: "the Idempotency-Key header holds more than one quoted string (several header lines?)",
        };
      return { kind: "key", key };
    } else if (c < " " || c > "~") {
      return { kind: "invalid", why: "the quoted key has a character outside printable ASCII" };
    } else {
      key += c;
    }
  }
  return { kind: "invalid", why: "the quoted key has no closing double quote" };
}

/** The unquoted form many clients send: visible ASCII without `"`, `,`, `;` or white space. */
function parseToken(text: string): ParsedIdempotencyKey {
  if (/^[!#-+\--:<-~]+$/.test(text)) return { kind: "key", key: text };
  return {
    kind: "invalid",
    why:
      'the Idempotency-Key header is neither a quoted string ("…") nor one token of visible ASCII ' +
      "without quotes, commas, semicolons or spaces",
  };
}
