/** `lock show|break` targets: read from the command line before any request. */
import { UsageError } from "../../../tools/internal/args.js";
import { parseLockTarget } from "../../../tools/cli/commands/lock-target.js";

describe("lock command targets", () => {
  it("reads blobs, containers, files (with directories) and shares", () => {
    expect(parseLockTarget("show", ["locks", "jobs/report"], {})).toEqual({
      kind: "blob",
      containerName: "locks",
      blobName: "jobs/report",
    });
    expect(parseLockTarget("break", ["locks"], {})).toEqual({ kind: "container", containerName: "locks" });
    expect(parseLockTarget("show", [], { file: "config/a/b/settings.json" })).toEqual({
      kind: "file",
      shareName: "config",
      directory: "a/b",
      fileName: "settings.json",
    });
    expect(parseLockTarget("show", [], { file: "config/settings.json" })).toMatchObject({
      directory: "",
      fileName: "settings.json",
    });
    expect(parseLockTarget("break", [], { share: "reports" })).toEqual({ kind: "share", shareName: "reports" });
  });

  it.each([
    [[], {}, /needs a container name, --file/],
    [["locks", "a", "b"], {}, /unexpected argument "b"/],
    [[], { file: "only-a-share" }, /--file takes <share>\/<path/],
    [[], { file: true }, /--file needs a value/],
    [[], { file: "s/f", share: "s" }, /not both/],
    [["extra"], { share: "s" }, /unexpected argument "extra"/],
    [[], { share: "s/f" }, /--share takes a share name/],
    [[], { share: "s", azurite: true }, /Azurite does not emulate it/],
  ])("%p %p is a usage error", (positional, flags, message) => {
    expect(() => parseLockTarget("show", positional as string[], flags)).toThrow(UsageError);
    expect(() => parseLockTarget("show", positional as string[], flags)).toThrow(message);
  });

  it("list works on containers only", () => {
    expect(() => parseLockTarget("list", [], { share: "s" })).toThrow(/lock list lists the locks in a container/);
  });
});
