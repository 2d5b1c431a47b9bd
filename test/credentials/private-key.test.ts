/**
 * `lazy auth set` with a GitHub App's private key, through the compiled binary and its daemon: a
 * PEM private key (PKCS#8 or PKCS#1) is the one multi-line value taken; any other multi-line value,
 * a certificate and an encrypted key are refused with the rule; `lazy auth list`, the output and
 * the daemon log never show the key, and a restarted daemon reads it back.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const pair = () => generateKeyPairSync("rsa", { modulusLength: 2048 });
/** The key's body lines: none may show anywhere but the credential store. */
const bodyLines = (pem: string) => pem.split("\n").filter((l) => l.length > 40);

describe("lazy auth set with a PEM private key", () => {
  test("a PEM private key is stored (kind private-key, no tail shown); other multi-line values are refused with the rule", async () => {
    const p = new Project();
    const pkcs1 = pair().privateKey.export({ format: "pem", type: "pkcs1" }).toString();
    const pkcs8 = pair().privateKey.export({ format: "pem", type: "pkcs8" }).toString();
    expect(pkcs1).toStartWith("-----BEGIN RSA PRIVATE KEY-----\n");
    expect(pkcs8).toStartWith("-----BEGIN PRIVATE KEY-----\n");

    const set1 = await p.run(["auth", "set", "gh-app"], { stdin: pkcs1 });
    expect(set1.code, set1.stderr).toBe(0);
    expect(set1.stdout + set1.stderr).toContain("Stored gh-app (private-key) in the file store.");
    const set8 = await p.run(["auth", "set", "other-app"], { stdin: `${pkcs8}\n` });
    expect(set8.code, set8.stderr).toBe(0);
    // A private key needs no provider name: no "not a provider name" warning.
    expect(set8.stderr).not.toContain("not a provider name");

    const list = await p.json(["auth", "list"]);
    expect(list.credentials).toEqual([
      expect.objectContaining({ name: "gh-app", kind: "private-key", source: "file", last4: "" }),
      expect.objectContaining({ name: "other-app", kind: "private-key", source: "file", last4: "" }),
    ]);
    const text = await p.ok(["auth", "list"]);
    expect(text.stdout).toMatch(/gh-app\s+private-key\s+file\s+\S+\s+-/);

    // Stored as one word; a restarted daemon (it re-reads the store) still has both.
    const file = readFileSync(join(p.home, "credentials", "credentials.json"), "utf8");
    expect(JSON.parse(file).credentials["gh-app"].value).toMatch(/^lazy-private-key:pkcs8:[A-Za-z0-9+/=]+$/);
    await p.ok(["daemon", "stop"]);
    expect((await p.json(["auth", "list"])).credentials.map((c: { name: string; kind: string }) => `${c.name} ${c.kind}`)).toEqual([
      "gh-app private-key",
      "other-app private-key",
    ]);

    const refused = async (value: string, says: string) => {
      const r = await p.run(["auth", "set", "bad"], { stdin: value });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(says);
      expect(r.stderr).toContain("nothing was stored");
      for (const l of bodyLines(value)) expect(r.stderr).not.toContain(l);
      return r.stderr;
    };
    const twoLines = await refused("ghp_first-line-of-a-token\nsecond-line-of-it", "must be a single key or token");
    expect(twoLines).toContain(
      "a PEM private key (-----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----, unencrypted, at most 16 KiB) is the one value that may span lines",
    );
    expect(twoLines).not.toContain("first-line-of-a-token");
    const pub = pair().publicKey.export({ format: "pem", type: "spki" }).toString();
    await refused(pub, "it is not one PEM private key");
    const encrypted = pair().privateKey.export({ format: "pem", type: "pkcs8", cipher: "aes-256-cbc", passphrase: "pw" }).toString();
    await refused(encrypted, "it is not one PEM private key (an encrypted key");
    // PEM lines around something that is no key.
    await refused("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5IGF0IGFsbA==\n-----END PRIVATE KEY-----", "node:crypto cannot read it as one");
    await refused(`-----BEGIN PRIVATE KEY-----\n${"QUFB".repeat(5000)}\n-----END PRIVATE KEY-----`, "the PEM is longer than 16 KiB");
    expect((await p.json(["auth", "list"])).credentials.map((c: { name: string }) => c.name)).toEqual(["gh-app", "other-app"]);

    for (const l of [...bodyLines(pkcs1), ...bodyLines(pkcs8)]) {
      expect(p.log()).not.toContain(l);
      expect(text.stdout + text.stderr).not.toContain(l);
      expect(set1.stdout + set1.stderr + set8.stdout + set8.stderr).not.toContain(l);
    }
  }, 60_000);
});
