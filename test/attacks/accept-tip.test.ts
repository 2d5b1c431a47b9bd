/**
 * Accept merges what the person reviewed, not what the branch holds by then. The dashboard's
 * Accept (the task page's bar, the compare page's Keep) names the tip of the diff it showed; a
 * later turn's commits on the branch — an agent that commits again after the review was read, or
 * a diff slow to load again — make the daemon refuse the merge, naming both commits, and merge
 * nothing. Without a tip (lazy accept on a terminal) the branch is merged as before.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { upstream } from "../helpers/fixtures";
import { handMadeGroup } from "../helpers/groups";
import { cleanupAll, Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

let mock: Mock.MockProvider;
let p: Project;
let codes: string[];

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = new Project({ toml: `${upstream(mock.url)}\n[profiles.a]\nharness = "claude"\n` });
  sh(p.root, "printf 'x\\n' > f.txt && git add f.txt && git -c user.name=Dev -c user.email=dev@example.com commit -qm base");
  await p.setCredential("anthropic", `sk-ant-api03-ACCEPTTIP-${"t".repeat(67)}AA`);
  codes = await handMadeGroup(p, "g", [{ "f.txt": "reviewed" }, {}]);
}, 120_000);

afterAll(() => cleanupAll(mock));

const accept = async (ref: string, body: unknown) => {
  const res = await fetch(`http://127.0.0.1:${p.runtime()!.api.port}/api/tasks/${ref}/accept`, {
    method: "POST",
    headers: { authorization: `Bearer ${p.token()}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
};

describe("accept names the reviewed tip", () => {
  test("a branch that moved after the review is refused, naming both commits, and nothing is merged", async () => {
    const c = codes[0]!;
    await p.ok(["task", "list"]); // the daemon up again
    const reviewed = sh(p.root, `git rev-parse lazy/${c}`).out.trim();
    // A later turn's commit, unseen by the person.
    sh(
      p.root,
      `git checkout -q lazy/${c} && printf 'evil\\n' > evil.txt && git add evil.txt && git -c user.name=Agent -c user.email=a@example.com commit -qm later && git checkout -q main`,
    );
    const now = sh(p.root, `git rev-parse lazy/${c}`).out.trim();
    const r = await accept(c, { tip: reviewed });
    expect(r.status).toBe(409);
    expect(r.json.error.message).toContain("moved since the diff you reviewed");
    expect(r.json.error.message).toContain(reviewed.slice(0, 12));
    expect(r.json.error.message).toContain(now.slice(0, 12));
    expect(existsSync(join(p.root, "evil.txt"))).toBe(false);
    expect(sh(p.root, "git log --format=%s main").out).not.toContain("later");
    expect((await p.json(["task", "show", c])).task.status).toBe("done");
  });

  test("a tip that is not a commit id is refused as bad input before anything runs", async () => {
    for (const tip of ["HEAD", "--output=/tmp/x", "a".repeat(39), `${"a".repeat(40)}\n`]) {
      const r = await accept(codes[0]!, { tip });
      expect(r.status, tip).toBe(400);
    }
    expect((await p.json(["task", "show", codes[0]!])).task.status).toBe("done");
  });

  test("the tip the page shows now merges", async () => {
    const c = codes[0]!;
    const now = sh(p.root, `git rev-parse lazy/${c}`).out.trim();
    const r = await accept(c, { tip: now });
    expect(r.status).toBe(200);
    expect(existsSync(join(p.root, "evil.txt"))).toBe(true);
    expect((await p.json(["task", "show", c])).task.status).toBe("accepted");
  });
});
