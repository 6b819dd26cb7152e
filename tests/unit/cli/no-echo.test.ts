/**
 * The command line tool never echoes a word that may be a secret (issue 21): an account key pasted
 * as `--account-name`, as a container name or as a stray word is shown by its length only, in every
 * message that quotes what was typed; and the advice on a refusal fits how the command signed in
 * (a data role for Microsoft Entra ID, a right for a SAS), never the other's.
 */
import { jest } from "@jest/globals";
import { runCli } from "../../../tools/cli/run.js";
import { explain, SignedInFailure } from "../../../tools/cli/explain.js";
import { mayBeSecret, numberFlag, numberListFlag, shownArgument } from "../../../tools/internal/args.js";

/** A storage account key's shape: 64 random bytes in base64 (this one is Azurite's published key). */
const KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const SAS =
  "sv=2024-05-04&ss=b&srt=co&sp=rl&se=2030-01-01T00%3A00%3A00Z&sig=Zm9vYmFyYmF6cXV4cXV1eDEyMzQ1Njc4OTAxMjM0NTY%3D";
const CLIENT_SECRET = "Xy7Q~a1b2C3d4E5f6G7h8I9j0K_lMnOpQrStUvWx";

async function capture(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const o = jest.spyOn(process.stdout, "write").mockImplementation((s) => (out.push(String(s)), true));
  const e = jest.spyOn(process.stderr, "write").mockImplementation((s) => (err.push(String(s)), true));
  const saved = process.env["AZURE_STORAGE_CONNECTION_STRING"];
  delete process.env["AZURE_STORAGE_CONNECTION_STRING"];
  try {
    const code = await runCli(argv);
    return { code, out: out.join(""), err: err.join("") };
  } finally {
    o.mockRestore();
    e.mockRestore();
    if (saved !== undefined) process.env["AZURE_STORAGE_CONNECTION_STRING"] = saved;
  }
}

describe("a word that may be a secret", () => {
  it.each([
    KEY,
    KEY.slice(0, 44),
    SAS,
    `AccountKey=${KEY.slice(0, 10)}`,
    CLIENT_SECRET,
    "Bearer abc",
    "eyJhbGciOiJIUzI1NiJ9.e30.x",
  ])("is recognised: %s", (word) => {
    expect(mayBeSecret(word)).toBe(true);
    expect(shownArgument(word)).toBe(`(${word.length} characters, not shown: it may be a secret)`);
  });

  it.each([
    "locks",
    "nightly-report",
    "jobs/nightly",
    "report.html",
    "frob",
    "reports/2024/march/summary/final/version2",
    "50,25",
  ])("is not, for a name people choose: %s", (word) => {
    expect(mayBeSecret(word)).toBe(false);
    expect(shownArgument(word)).toBe(JSON.stringify(word));
  });
});

describe("no message of the tool echoes a pasted key", () => {
  it.each([
    ["--account-name", ["lock", "list", "locks", "--account-name", KEY], /--account-name takes a storage account name/],
    ["--blob-endpoint", ["lock", "list", "locks", "--blob-endpoint", KEY], /--blob-endpoint takes a URL/],
    ["a stray word after lock list", ["lock", "list", "locks", KEY], /unexpected argument/],
    ["a stray word after lock show", ["lock", "show", "locks", "blob", KEY], /unexpected argument/],
    ["the action", ["lock", KEY], /lock needs an action/],
    ["the command", [KEY], /unknown command/],
    ["a word before the command", [KEY, "lock"], /unknown command|the command comes first/],
    ["--share", ["lock", "show", "--share", KEY], /--share takes a share name/],
    ["a stray word with --share", ["lock", "show", "--share", "config", KEY], /unexpected argument/],
    ["a stray word after semaphore list", ["semaphore", "list", "locks", KEY], /unexpected argument/],
    ["a stray word after semaphore show", ["semaphore", "show", "locks", "exports", KEY], /unexpected argument/],
    ["the semaphore action", ["semaphore", KEY], /semaphore needs an action/],
    ["--slot", ["semaphore", "break", "locks", "exports", "--slot", KEY], /--slot takes a slot number/],
    ["a stray word after stress", ["stress", KEY], /unexpected argument/],
    ["--designs", ["stress", "--designs", KEY], /unknown design/],
    ["--mix", ["stress", "--mix", KEY], /--mix takes three shares/],
    ["--duration", ["stress", "--duration", KEY], /--duration must be a number/],
    ["the bench scenario", ["bench", KEY], /unknown scenario/],
    ["a stray word after bench", ["bench", "retry", KEY], /unexpected argument/],
    ["--report", ["bench", "all", "--report", KEY], /--report takes a Markdown file name/],
    ["a value that starts with a dash", ["stress", "--out", `-${KEY}`], /--out needs a value/],
  ])("%s", async (_, argv, message) => {
    const run = await capture(...argv);
    expect(run.code).toBe(2);
    expect(run.err).toMatch(message);
    for (const part of [KEY, KEY.slice(0, 20), KEY.slice(-20)]) expect(run.err + run.out).not.toContain(part);
    expect(run.err).toMatch(/\(\d+ characters, not shown: it may be a secret\)/);
  });

  it("tells where a key pasted as --account-name belongs", async () => {
    const run = await capture("lock", "list", "locks", "--account-name", KEY);
    expect(run.err).toMatch(/looks like a key, a SAS or a token, which never goes on the command line/);
    expect(run.err).toMatch(/AZURE_STORAGE_CONNECTION_STRING/);
  });

  it("still quotes plain words, so a typo can be seen", async () => {
    expect((await capture("lock", "list", "locks", "extra")).err).toMatch(/unexpected argument "extra"/);
    expect((await capture("lock", "list", "locks", "--account-name", "My_Account")).err).toMatch(/got "My_Account"$/m);
  });

  it("numeric flags quote the value the same way", () => {
    expect(() => numberFlag({ n: KEY }, "n", 1)).toThrow(/--n must be a number, got \(88 characters, not shown/);
    expect(() => numberListFlag({ n: `1,${KEY}` }, "n", [1])).toThrow(
      /--n takes positive numbers, got \(88 characters/,
    );
    expect(() => numberFlag({ n: "x" }, "n", 1)).toThrow(/--n must be a number, got "x"/);
  });

  it("shows a file path a Node.js error names the same way", () => {
    const enoent = Object.assign(new Error(`ENOENT: no such file or directory, open '${KEY}'`), {
      code: "ENOENT",
      path: KEY,
    });
    const line = explain(enoent);
    expect(line).not.toContain(KEY);
    expect(line).toMatch(/open '\(88 characters, not shown/);
    const plain = Object.assign(new Error("ENOENT: no such file or directory, open 'result.json'"), {
      code: "ENOENT",
      path: "result.json",
    });
    expect(explain(plain)).toBe("ENOENT: no such file or directory, open 'result.json'");
  });
});

describe("the advice on a refusal fits how the command signed in", () => {
  const refused = (code: string) =>
    Object.assign(new Error("This request is not authorized to perform this operation using this permission."), {
      name: "RestError",
      statusCode: 403,
      code,
    });

  it("a role for Microsoft Entra ID", () => {
    const line = explain(new SignedInFailure("entra", refused("AuthorizationPermissionMismatch")));
    expect(line).toMatch(
      /403 AuthorizationPermissionMismatch: the signed-in identity has no data role.*Storage Blob Data Reader/,
    );
  });

  it.each(["AuthorizationPermissionMismatch", "AuthorizationFailure", "AuthorizationResourceTypeMismatch"])(
    "a right for a SAS (%s), never a role",
    (code) => {
      const line = explain(new SignedInFailure("sas", refused(code)));
      expect(line).toMatch(
        new RegExp(`403 ${code}: the SAS does not allow this: .*read and list \\(r, l\\).*write \\(w\\)`),
      );
      expect(line).not.toMatch(/role|Entra|identity/i);
    },
  );

  it("neither, when the command did not say how it signed in", () => {
    const line = explain(refused("AuthorizationPermissionMismatch"));
    expect(line).toMatch(/the credential may not do this/);
    expect(line).not.toMatch(/Storage Blob Data Reader/);
  });
});

describe("the tool's hints are the library's (issue 23, item 4)", () => {
  it("a refused connection: the library's networkHint, 'nothing listens there'", async () => {
    const { networkHint } = await import("../../../src/error-codes.js");
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:10000"), {
      name: "RestError",
      code: "ECONNREFUSED",
      request: { url: "http://127.0.0.1:10000/devstoreaccount1/locks?restype=container" },
    });
    const line = explain(refused);
    expect(line).toBe(`cannot reach http://127.0.0.1:10000 (ECONNREFUSED): ${networkHint("ECONNREFUSED")}`);
    expect(line).toContain("nothing listens there");
  });

  it.each([
    ["InvalidResourceName", "The specified resource name contains invalid characters."],
    ["OutOfRangeInput", "The specified resource name length is not within the permissible limits."],
  ])("a bad container name (400 %s): the naming rules", (code, message) => {
    const line = explain(Object.assign(new Error(message), { name: "RestError", statusCode: 400, code }));
    expect(line).toBe(
      `${message} (400 ${code}: if a name is at fault: container, share and queue names are 3 to 63 characters of ` +
        "lower-case letters, digits and single hyphens, starting with a letter or digit; table names are 3 to 63 " +
        "letters and digits, starting with a letter)",
    );
  });
});
