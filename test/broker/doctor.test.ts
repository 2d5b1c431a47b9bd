/**
 * `lazy doctor` on brokered services (issue 36, Deliver 5): each service with its hosts and the
 * source of its token; a stored credential that is missing blocks, naming `lazy auth set`; a
 * network mode the broker cannot work under is said with its remedy. The daemon answers with
 * what it resolved from lazy.toml (/api/auth), so doctor says what a launch would do.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

type Finding = { check: string; ok: boolean; blocking: boolean; summary: string; remedy?: string };
/** Doctor reads the services from the running daemon (/api/auth); it starts none itself (issue 37). */
const findings = async (p: Project) => {
  await p.ok(["daemon", "start"]);
  return (JSON.parse((await p.run(["doctor", "--json"])).stdout) as { findings: Finding[] }).findings.filter((f) => f.check === "services");
};

const TOML = `[[service]]
shape = "github"
credential = "github"
push = true

[[service]]
shape = "npm"
hosts = ["npm.corp.example"]
scopes = ["@acme"]
command = ["gh", "auth", "token"]
ttl = "30m"
`;

describe("lazy doctor on [[service]]", () => {
  test("each service, its hosts and source; a missing credential blocks with its remedy, then is fine once stored", async () => {
    const p = new Project({ toml: TOML });
    let f = await findings(p);
    const gh = f.find((x) => x.summary.startsWith("service github:"));
    expect(gh).toMatchObject({ ok: false, blocking: true, remedy: "lazy auth set github" });
    expect(gh!.summary).toContain("github.com, api.github.com");
    expect(gh!.summary).toContain("token from credential github");
    expect(gh!.summary).toContain("pushes to lazy/<task> allowed");
    const npm = f.find((x) => x.summary.startsWith("service npm:"));
    expect(npm).toMatchObject({ ok: true });
    expect(npm!.summary).toContain("npm.corp.example brokered, token from command gh auth token");
    await p.setCredential("github", `ghp_${"x".repeat(36)}`);
    f = await findings(p);
    expect(f.find((x) => x.summary.startsWith("service github:"))).toMatchObject({ ok: true });
    expect(JSON.stringify(f)).not.toContain("x".repeat(36));
  });

  test('network = "open": the broker cannot work, and doctor says what to set', async () => {
    const p = new Project({ toml: `[container]\nnetwork = "open"\n\n${TOML}` });
    const f = await findings(p);
    expect(f.find((x) => x.summary.includes('network = "open"'))).toMatchObject({
      ok: false,
      remedy: expect.stringContaining('network = "allowlist"'),
    });
  });
});
