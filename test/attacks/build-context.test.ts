/**
 * A person's secrets in the checkout do not reach the agent's image. The project's Dockerfile
 * (trusted: the person approved it) says `COPY . /ctx`, a common line. The checkout holds what
 * .gitignore keeps out of git: an `.env` with a cloud key, a private key, `node_modules`. The
 * agent runs in the image and can read all of /ctx, then send it anywhere its network allows.
 *
 * Against the code before this test (containers/image.ts contextOf sent every file under the
 * Dockerfile's folder but .git): /ctx held .env and deploy.pem, and run.sh lost its mode
 * (the context's tar wrote 644 for every file), so a `RUN ./run.sh` failed "permission denied".
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { needDocker, TEST_IMAGES } from "../helpers/env";
import { settled, teardown, upstream } from "../helpers/fixtures";
import { Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-BUILDCTX-" + "b".repeat(72) + "AA";
const SECRET = "AWS_SECRET_ACCESS_KEY=a-persons-own-" + crypto.randomUUID();
let anthropic: Mock.MockProvider | undefined;
let p: Project | undefined;
afterAll(() => teardown(p, anthropic));
const putIn = (q: Project, path: string, text: string) => {
  mkdirSync(join(q.root, path, ".."), { recursive: true });
  writeFileSync(join(q.root, path), text);
};

describe("a project Dockerfile's COPY . of a checkout with ignored secrets", () => {
  test("the image has what git tracks or would track, executables runnable; not .env, the key file, node_modules or .git", async () => {
    await needDocker();
    anthropic = await Mock.anthropic();
    p = new Project();
    const put = (path: string, text: string) => putIn(p!, path, text);
    put(
      "Dockerfile.lazy",
      `FROM ${TEST_IMAGES.node}\nCOPY . /ctx\nRUN /ctx/run.sh > /ctx-ran && ls -A /ctx > /ctx-list && ls -A /ctx/${"deep/".repeat(25)} >> /ctx-list\n`,
    );
    put(".gitignore", "lazy.toml\n.env\n*.pem\nnode_modules/\n");
    put("app.txt", "tracked\n");
    put("run.sh", `#!/bin/sh\necho ran-${crypto.randomUUID()}\n`);
    chmodSync(join(p.root, "run.sh"), 0o755);
    put(`${"deep/".repeat(25)}far.txt`, "a path past ustar's 100 bytes\n");
    expect(sh(p.root, "git add -A && git -c user.name=Dev -c user.email=dev@example.com commit -qm init").code).toBe(0);
    put("notes.txt", "untracked, not ignored\n");
    put(".env", `${SECRET}\n`);
    put("deploy.pem", "-----BEGIN PRIVATE KEY-----\n");
    put("node_modules/dep/index.js", "module.exports = 1;\n");
    // lazy trust approves the Dockerfile by its contents, as the person would.
    p.writeToml(`[container]\ndockerfile = "Dockerfile.lazy"\n\n${upstream(anthropic.url)}`);
    await p.setCredential("anthropic", KEY);

    await p.ok(["task", "add", "look around", "--code", "ctx"]);
    const start = await p.run(["start", "ctx"]);
    // The image has no Claude Code: built, then refused by the preflight's harness check (issue 37).
    expect(start.code, start.stderr).toBe(4);
    expect(start.stderr).toContain("The claude harness does not run in the image");
    const s = await p.json(["task", "show", "ctx"]);
    const tag = s.events.find((e: any) => e.kind === "build" && typeof e.data.done === "string")?.data.done;
    expect(tag).toBeString();
    const cat = (file: string) => sh("/", `docker run --rm --entrypoint cat ${tag} ${file}`);
    const list = cat("/ctx-list");
    expect(list.code, list.err).toBe(0);
    const names = list.out.trim().split("\n");
    for (const want of ["Dockerfile", ".gitignore", "app.txt", "notes.txt", "run.sh", "deep", "far.txt"]) expect(names).toContain(want);
    for (const never of [".env", "deploy.pem", "node_modules", ".git", "lazy.toml"]) expect(names).not.toContain(never);
    expect(cat("/ctx-ran").out).toStartWith("ran-");
    // Nowhere in the image's /ctx, whatever its name.
    const grep = sh("/", `docker run --rm --entrypoint grep ${tag} -r -l a-persons-own /ctx`);
    expect(grep.out).toBe("");
  }, 300_000);

  test("a COPY of the ignored .env fails the launch, saying ignored files stay out and what to do", async () => {
    putIn(p!, "Dockerfile.lazy", `FROM ${TEST_IMAGES.node}\nCOPY .env /ctx/.env\n`);
    p!.writeToml(`[container]\ndockerfile = "Dockerfile.lazy"\n\n${upstream(anthropic!.url)}`);
    await p!.ok(["task", "add", "copy the secrets", "--code", "env"]);
    const r = await p!.run(["start", "env"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("(COPY .env /ctx/.env)");
    expect(r.stderr).toContain("ignored files (.env, keys, node_modules) stay out of the agent's image");
    expect(r.stderr).not.toContain(SECRET);
    expect((await settled(p!, "env", 60_000)).task.status).toBe("failed");
  }, 300_000);
});
