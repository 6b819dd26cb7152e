import { base64Codec, isMessageDecodeError, jsonCodec, textCodec } from "../../../src/queue/index.js";

function decodeError(run: () => unknown): { message: string; codec: string } {
  try {
    run();
  } catch (error) {
    if (isMessageDecodeError(error)) return error;
    throw error;
  }
  throw new Error("expected a MessageDecodeError");
}

describe("message codecs", () => {
  it("text passes the message through", () => {
    expect(textCodec.decode("héllo <&>")).toBe("héllo <&>");
    expect(textCodec.encode("x")).toBe("x");
  });

  it("base64 round-trips bytes and rejects text that is not strict base64", () => {
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252]);
    expect(base64Codec.decode(base64Codec.encode(bytes))).toEqual(bytes);
    expect(base64Codec.decode("aGk=\n")).toEqual(Buffer.from("hi"));
    const error = decodeError(() => base64Codec.decode("hello world!"));
    expect(error.codec).toBe("base64");
    expect(error.message).toMatch(/not valid base64 \(12 characters: "hello world!"\)/);
  });

  it("json parses, validates and encodes; a bad body says why", () => {
    const codec = jsonCodec<{ id: string }>({
      validate: (value) => {
        if (typeof (value as { id?: unknown }).id !== "string") throw new Error("`id` must be a string");
        return value as { id: string };
      },
    });
    expect(codec.decode('{"id":"a"}')).toEqual({ id: "a" });
    expect(codec.encode({ id: "b" })).toBe('{"id":"b"}');
    expect(decodeError(() => codec.decode("{oops")).message).toMatch(/not valid JSON: .* \(5 characters: "\{oops"\)/);
    expect(decodeError(() => codec.decode('{"id":1}')).message).toMatch(
      /rejected by the codec's validate\(\): `id` must be a string/,
    );
  });

  it("json inside base64, as .NET and Azure Functions producers write it", () => {
    const codec = jsonCodec<{ n: number }>({ base64: true });
    const text = codec.encode({ n: 1 });
    expect(text).toBe(Buffer.from('{"n":1}').toString("base64"));
    expect(codec.decode(text)).toEqual({ n: 1 });
    expect(codec.name).toBe("base64-json");
    expect(decodeError(() => codec.decode('{"n":1}')).message).toMatch(/not valid base64/);
    expect(decodeError(() => codec.decode(Buffer.from("nope").toString("base64"))).message).toMatch(
      /not valid JSON inside base64/,
    );
  });

  it("rejects a validate that is not a function", () => {
    expect(() => jsonCodec({ validate: 3 as never })).toThrow(TypeError);
  });
});
