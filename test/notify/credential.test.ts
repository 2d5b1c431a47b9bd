/**
 * [notify] webhook_credential: the webhook URL (a secret) lives in the credential store, not in
 * lazy.toml, which every task container can read. A real turn ending done reaches the URL the
 * credential holds; nothing the project or the log holds has the secret; a credential that is
 * not stored drops the notification with a log line naming it. Needs a real Docker engine.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { requireDocker, TEST_IMAGES } from "../helpers/env";
import { launched } from "../helpers/fixtures";
import { cleanupAll, Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-NOTIFYCRED-${"c".repeat(70)}AA`;
const SECRET = "T0123ABCD/B0456EFGH/abcdefGHIJKL1234mnopQRST";
let anthropic: Mock.MockProvider;
let p: Project;
const hits: { path: string; body: any }[] = [];
let server: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  if (!(await requireDocker())) throw new Error("these tests need a Docker engine: bash scripts/setup-test-env.sh starts one");
  anthropic = await Mock.anthropic();
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      hits.push({ path: new URL(req.url).pathname, body: JSON.parse(await req.text()) });
      return new Response(null, { status: 200 });
    },
  });
  p = new Project({
    toml: `[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n\n[notify]\nwebhook_credential = "team-hook"\n`,
  });
  sh(p.root, "git -c user.name=Dev -c user.email=dev@example.com commit -q --allow-empty -m init");
  await p.setCredential("anthropic", KEY);
}, 120_000);
afterAll(async () => {
  await cleanupAll();
  await anthropic?.close();
  server?.stop(true);
});

async function turn(code: string): Promise<void> {
  anthropic.answer({ text: "Done here." });
  await launched(p, code, `Notify ${code}`);
  await until(async () => ((await p.json(["task", "show", code])).task.status === "done" ? true : undefined), 300_000, `task ${code} done`);
}

describe("[notify] webhook_credential", () => {
  test("not stored: the notification is dropped and the log names the credential; stored: the turn's done reaches its URL, and lazy.toml and the log never hold it", async () => {
    await turn("before-stored");
    await until(() => p.log().includes('webhook_credential names "team-hook", which is not stored'), 30_000, "the log line");
    expect(hits).toEqual([]);

    await p.setCredential("team-hook", `http://127.0.0.1:${server.port}/services/${SECRET}`);
    await turn("after-stored");
    await until(() => hits.length >= 1 || undefined, 30_000, "the webhook");
    expect(hits.map((h) => [h.path, h.body.event, h.body.task.code])).toEqual([[`/services/${SECRET}`, "done", "after-stored"]]);
    expect(readFileSync(join(p.root, "lazy.toml"), "utf8")).not.toContain(SECRET);
    expect(p.log()).not.toContain(SECRET);
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout).not.toContain("holds a URL with a secret");
  }, 900_000);
});
