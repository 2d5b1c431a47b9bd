/**
 * Who may use lazy's proxy without a placeholder (issue 26, Deliver 6): the docs keep one such
 * caller, a session on this machine bringing its own credential (forwarded as is, unattributed).
 * A container is never that caller: it holds nothing but its placeholder, so a credential of its
 * own (the attacker's key, to bill through lazy unattributed) is refused, and so is its
 * placeholder riding beside another credential (it would reach the provider). Real Claude Code
 * in a real container runs proxy-identity-agent.mjs as a Bash tool call; a hostile local process
 * tries the second from the host.
 *
 * On the code before this test: the container's own key went upstream (the mock saw it), and
 * the placeholder beside a junk x-api-key was forwarded to the provider.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { anthropicProject, copying, launched } from "../helpers/fixtures";
import { cleanupAll, type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-IDENTITYREAL-" + "r".repeat(68) + "AA";
const ATTACKER_KEY = "sk-ant-api03-ATTACKERSOWN-" + "a".repeat(67) + "AA";
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(
  async () =>
    ({ anthropic, p } = await anthropicProject(KEY, { readme: false, files: copying(import.meta.dir, "proxy-identity-agent.mjs") })),
  120_000,
);
afterAll(() => cleanupAll(anthropic));

/** Every credential the mock provider was sent, in any header. */
const credentialsSeen = () =>
  anthropic.received.flatMap((r) => [r.headers["x-api-key"], r.headers.authorization].filter(Boolean)).join("\n");

describe("credentials that are not a placeholder", () => {
  test("from a container: its own key is refused 401 and never reaches the provider; its placeholder beside a junk key likewise", async () => {
    anthropic.answer({
      text: "done.",
      toolUse: { name: "Bash", input: { command: `node proxy-identity-agent.mjs ${ATTACKER_KEY}`, description: "probe" } },
    });
    await launched(p, "identity", "Probe who the proxy trusts");
    const status = await until(
      async () => {
        const s = (await p.json(["task", "show", "identity"])).task.status;
        return s !== "running" && s !== "queued" ? s : undefined;
      },
      300_000,
      "the probe's turn",
    );
    expect(status).toBe("done");
    const r = JSON.parse(readFileSync(join(p.stateDir, "worktrees", "identity", "proxy-identity.json"), "utf8"));
    expect(r.base && r.placeholder).toBe(true);
    expect(r.own.status).toBe(401);
    expect(r.own.text).toContain("only a session on this machine may bring its own");
    expect(r.ownBearer.status).toBe(401);
    expect(r.beside.status).toBe(401);
    expect(r.beside.text).toContain("a placeholder beside another credential");
    // The provider saw the real key (the agent's own turn) and nothing else.
    expect(credentialsSeen()).not.toContain("ATTACKERSOWN");
    expect(credentialsSeen()).not.toContain("-lazy-");
    expect(anthropic.received.some((r) => r.body.includes("zq-identity-probe-zq"))).toBe(false);
    // Callers lazy cannot attribute: counted per minute, source and reason, not rows (proxy/audit/refusals.ts).
    const counted = (await p.json(["stats", "audit"])).refused.filter((l: any) => /own credential from|placeholder beside/.test(l.reason));
    expect(counted.reduce((n: number, l: any) => n + l.count, 0)).toBe(3);
  }, 600_000);

  test("from the host: a placeholder beside a credential of another shape is refused and not forwarded", async () => {
    anthropic.reset();
    const g = await p.grant({ role: "host" });
    const res = await fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "not-a-key-at-all", authorization: `Bearer ${g.placeholder}` },
      body: JSON.stringify({ model: "m", max_tokens: 1, messages: [{ role: "user", content: "x" }] }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("x-lazy-refusal")).toBe("placeholder_beside_credential");
    expect(anthropic.received).toEqual([]);
  });
});
