/**
 * The macOS Keychain backend. The stdin line it hands `security -i` is checked everywhere; the
 * real round trip runs on macOS only (against a throwaway service name in the login keychain).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { CredentialStore } from "../../src/credentials";
import { addLine, maxValueBytes, SECURITY } from "../../src/credentials/keychain";
import { fakeKey, filesContaining, run, tempHome } from "./helpers";

describe("the security -i line", () => {
  test("carries the value only as hex, on one line of plain words", () => {
    const value = fakeKey("sk-ant-api03-");
    const line = addLine("lazy", "work-openai", value);
    expect(line).not.toContain(value);
    expect(line.endsWith("\n")).toBe(true);
    expect(line.slice(0, -1)).not.toContain("\n");
    const words = line.trim().split(" ");
    expect(words.slice(0, 6)).toEqual(["add-generic-password", "-U", "-s", "lazy", "-a", "work-openai"]);
    expect(words[6]).toBe("-X");
    expect(Buffer.from(words[7]!, "hex").toString("utf8")).toBe(value);
  });

  test("stays inside security's 4096-byte line buffer for the longest name", () => {
    const name = "n".repeat(64);
    const max = maxValueBytes("lazy", name);
    expect(max).toBeGreaterThan(1800); // room for any API key or OAuth token
    expect(Buffer.byteLength(addLine("lazy", name, "x".repeat(max)))).toBeLessThanOrEqual(4000);
  });
});

let home: string;
let cleanup: () => void;
beforeEach(() => {
  ({ home, cleanup } = tempHome());
});
afterEach(() => cleanup());

describe.if(process.platform === "darwin")("macOS Keychain (real)", () => {
  test("auto picks it; set, read back via security, rotate, remove; too long is refused", async () => {
    const service = `lazy-test-${crypto.randomUUID().slice(0, 8)}`;
    const findArgs = (name: string) => [SECURITY, "find-generic-password", "-s", service, "-a", name, "-w"];
    try {
      const store = await CredentialStore.open({ home, env: {}, service });
      expect(store.backend).toBe("keychain");
      const v1 = fakeKey("sk-ant-api03-");
      const v2 = fakeKey("sk-ant-oat01-");
      await store.set("anthropic", v1);
      expect((await run(findArgs("anthropic"))).stdout.trim() === v1).toBe(true);
      await store.set("anthropic", v2);
      expect(store.get("anthropic")).toEqual({ value: v2, kind: "oauth-token", source: "keychain" });
      expect((await run(findArgs("anthropic"))).stdout.trim() === v2).toBe(true);

      const other = await CredentialStore.open({ home, env: {}, service });
      expect(other.list().map((c) => [c.name, c.source])).toEqual([["anthropic", "keychain"]]);

      const long = "k".repeat(maxValueBytes(service, "big") + 1);
      const err = await store.set("big", long).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).toMatch(/could not store credential "big" in the macOS Keychain/);
      expect(err?.message).not.toContain("kkkkkkkk");

      expect(await store.remove("anthropic")).toBe(true);
      expect((await run(findArgs("anthropic"))).code).toBe(44);
      expect(filesContaining(home, [v1, v2])).toEqual([]);
    } finally {
      for (const name of ["anthropic", "big"]) await run([SECURITY, "delete-generic-password", "-s", service, "-a", name]);
    }
  }, 60_000);
});
