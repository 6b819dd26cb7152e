/** `redactSecrets`: every shape in which a key or a SAS signature reaches a message, a log line or a file. */
import { inspect } from "node:util";
import { redactSecrets } from "../../../src/errors.js";

const KEY = "c2VjcmV0LWtleS1vZi10aGUtdGVzdA+/x9==";
const SIG = "Zm9vYmFy+/sig=";
const encoded = encodeURIComponent(SIG); // Zm9vYmFy%2B%2Fsig%3D

describe("redactSecrets", () => {
  it.each([
    [
      "a connection string",
      `DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${KEY};EndpointSuffix=core.windows.net`,
    ],
    ["an account key with spaces around =", `AccountName=a; AccountKey = ${KEY} ;`],
    ["a percent-encoded account key", `cs=AccountName%3Da%3BAccountKey%3D${encodeURIComponent(KEY)}`],
    ["a SAS in a query string", `https://a.blob.core.windows.net/c?sv=2024-05-04&sig=${encoded}&se=1`],
    [
      "a SAS connection string",
      `BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2024&sig=${encoded}`,
    ],
    [
      "a SAS URL percent-encoded inside another URL",
      `https://example.com/go?to=${encodeURIComponent(`https://a.blob.core.windows.net/c/b?sv=2024&sig=${SIG}&se=1`)}`,
    ],
    [
      "a SAS URL encoded twice",
      `https://x/?a=${encodeURIComponent(`https://y/?to=${encodeURIComponent(`https://a/c?sig=${SIG}&se=1`)}`)}`,
    ],
    ["sig as a JSON field", JSON.stringify({ sv: "2024", sig: SIG, se: "1" })],
    ["sig as a JSON field with spaces", JSON.stringify({ sig: SIG }, null, 2)],
    ["signature in util.inspect output", inspect({ signature: SIG, version: "2024" })],
    ["URLSearchParams in util.inspect output", inspect(new URLSearchParams({ sv: "2024", sig: SIG, se: "1" }))],
    ["an account key field", inspect({ accountName: "a", accountKey: KEY })],
    ["an account key Buffer", inspect({ accountName: "a", accountKey: Buffer.from(KEY, "base64") })],
  ])("covers %s", (_, text) => {
    const redacted = redactSecrets(text);
    for (const secret of [KEY, encodeURIComponent(KEY), SIG, encoded, encodeURIComponent(encoded), "Zm9vYmFy"]) {
      expect(redacted).not.toContain(secret);
    }
    expect(redacted).not.toMatch(/<Buffer [0-9a-f]{2}/);
    expect(redacted).toContain("<redacted>");
  });

  // An Entra ID access token (a JWT: header.payload.signature) as the Authorization header carries it.
  const JWT =
    "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJodHRwczovL3N0b3JhZ2UuYXp1cmUuY29tIn0.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg";
  it.each([
    ["an Authorization header", `Authorization: Bearer ${JWT}`],
    ["a lower-case header in util.inspect output", inspect({ headers: { authorization: `Bearer ${JWT}` } })],
    ["an Authorization field in JSON", JSON.stringify({ Authorization: `Bearer ${JWT}` })],
    ["HttpHeaders-like util.inspect output", `Map(1) { 'authorization' => 'Bearer ${JWT}' }`],
    ["a bare Bearer token", `request failed: Bearer ${JWT} was refused`],
    ["a bare JWT", `token ${JWT} expired`],
    ["a short opaque token in an Authorization header", "authorization=Bearer abc.DEF-123"],
    ["a long opaque bare Bearer token", "Bearer 0123456789abcdefABCDEF~+/=="],
  ])("covers bearer tokens: %s", (_, text) => {
    const redacted = redactSecrets(text);
    for (const secret of [JWT, "eyJ0eXAi", "c2lnbmF0dXJl", "abc.DEF-123", "0123456789abcdef"]) {
      expect(redacted).not.toContain(secret);
    }
    expect(redacted).toContain("<redacted>");
  });

  it("keeps the words around a bearer token, and prose that only mentions one", () => {
    expect(redactSecrets(`Authorization: Bearer ${JWT}`)).toBe("Authorization: Bearer <redacted>");
    expect(redactSecrets("use a Bearer token from Entra ID")).toBe("use a Bearer token from Entra ID");
    expect(redactSecrets("Authorization header missing")).toBe("Authorization header missing");
  });

  it("keeps what is not secret", () => {
    expect(redactSecrets(`https://a.blob.core.windows.net/c?sv=2024-05-04&sig=${encoded}&se=2030`)).toBe(
      "https://a.blob.core.windows.net/c?sv=2024-05-04&sig=<redacted>&se=2030",
    );
    expect(redactSecrets(JSON.stringify({ sv: "2024", sig: SIG, se: "1" }))).toBe(
      '{"sv":"2024","sig":"<redacted>","se":"1"}',
    );
    expect(redactSecrets("AccountName=a; AccountKey = k ;EndpointSuffix=x")).toBe(
      "AccountName=a; AccountKey = <redacted> ;EndpointSuffix=x",
    );
    expect(redactSecrets("signal=1 design=single")).toBe("signal=1 design=single");
  });
});
