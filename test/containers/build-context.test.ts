/**
 * The build context of a project's Dockerfile (containers/image.ts contextOf): what git tracks
 * or would track under the Dockerfile's folder, as the agent's worktree has it. Before, every
 * file under the folder went in: a person's ignored `.env`, key files and `node_modules` were
 * sent to the engine, and a Dockerfile's `COPY . /app` put them in the image the agent runs in.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Image } from "../../src/containers";
import { sh } from "../helpers/lazy";

const root = mkdtempSync(join(tmpdir(), "lazy-context-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const put = (path: string, text: string) => {
  mkdirSync(join(root, path, ".."), { recursive: true });
  writeFileSync(join(root, path), text);
};
put(".gitignore", ".env\nnode_modules/\n*.pem\n");
put("app.txt", "tracked\n");
put("run.sh", "#!/bin/sh\necho hi\n");
chmodSync(join(root, "run.sh"), 0o755);
put("sub/inner.txt", "inner\n");
put(`${"deep/".repeat(25)}far.txt`, "far down\n");
expect(sh(root, "git init -q && git add -A && git -c user.name=Dev -c user.email=dev@example.com commit -qm init").code).toBe(0);
put("notes.txt", "untracked, not ignored\n");
put(".env", "AWS_SECRET_ACCESS_KEY=a-persons-secret\n");
put("deploy.pem", "-----BEGIN PRIVATE KEY-----\n");
put("node_modules/dep/index.js", "module.exports = 1;\n");
symlinkSync("/etc/passwd", join(root, "passwd-link"));

/** A Dockerfile that takes files from its context (one that copies nothing gets none). */
const COPIES = "FROM scratch\nCOPY . /x\n";

describe("a project Dockerfile's build context", () => {
  test("a Dockerfile that copies nothing from its context is sent alone: nothing of the checkout goes into the build", async () => {
    const { files, read } = await Image.contextOf(root, root, "FROM scratch\nRUN true\n");
    expect(Object.keys(files)).toEqual(["Dockerfile"]);
    expect(read).toEqual([]);
  });

  test("holds what git tracks or would track, executables as such; ignored files, links and .git stay out", async () => {
    const { files, executable } = await Image.contextOf(root, root, COPIES);
    const names = Object.keys(files).sort();
    expect(names).toEqual(
      [".gitignore", "Dockerfile", "app.txt", "notes.txt", "run.sh", "sub/inner.txt", `${"deep/".repeat(25)}far.txt`].sort(),
    );
    expect(Buffer.from(files["app.txt"] as Uint8Array).toString()).toBe("tracked\n");
    expect(files.Dockerfile).toBe(COPIES);
    expect([...executable]).toEqual(["run.sh"]);
    expect(JSON.stringify(names)).not.toContain("secret");
  });

  test("a Dockerfile in a folder has that folder's files only, named from it", async () => {
    const { files } = await Image.contextOf(root, join(root, "sub"), COPIES);
    expect(Object.keys(files).sort()).toEqual(["Dockerfile", "inner.txt"]);
  });

  test("a Dockerfile's folder that is a link out of the checkout brings nothing of where it points", async () => {
    const outside = mkdtempSync(join(tmpdir(), "lazy-outside-"));
    try {
      writeFileSync(join(outside, "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n");
      symlinkSync(outside, join(root, "ci"));
      const { files } = await Image.contextOf(root, join(root, "ci"), COPIES);
      expect(Object.keys(files)).toEqual(["Dockerfile"]);
    } finally {
      rmSync(join(root, "ci"));
      rmSync(outside, { recursive: true, force: true });
    }
  });

  test("a tracked file deleted since is left out, not an error", async () => {
    rmSync(join(root, "app.txt"));
    try {
      const { files } = await Image.contextOf(root, root, COPIES);
      expect(Object.keys(files)).not.toContain("app.txt");
    } finally {
      put("app.txt", "tracked\n");
    }
  });
});

describe("whether a project image is out of date (contextStamp, copiesContext)", () => {
  test("a Dockerfile that COPYs or ADDs from its context says so; one that copies only from another stage does not", () => {
    expect(Image.copiesContext("FROM node\nCOPY . /app\n")).toBe(true);
    expect(Image.copiesContext("FROM node\n  add --chown=1000 x /x\n")).toBe(true);
    expect(Image.copiesContext("FROM node AS b\nRUN make\nFROM node\nCOPY --from=b /out /out\n")).toBe(false);
    expect(Image.copiesContext("FROM node\nRUN echo COPY . /app\n")).toBe(false);
  });

  test("the stamp changes with a file the context holds (content, mode, a new file), not with an ignored one", async () => {
    const stamp = () => Image.contextStamp(root, root);
    const before = await stamp();
    expect(await stamp()).toBe(before);
    // Ignored files are not in the context: a person's .env changing rebuilds nothing.
    put(".env", "AWS_SECRET_ACCESS_KEY=rotated\n");
    put("node_modules/dep/index.js", "module.exports = 2;\n");
    expect(await stamp()).toBe(before);
    put("app.txt", "tracked, edited\n");
    const edited = await stamp();
    expect(edited).not.toBe(before);
    chmodSync(join(root, "app.txt"), 0o755);
    const moded = await stamp();
    expect(moded).not.toBe(edited);
    put("sub/new.txt", "new\n");
    expect(await stamp()).not.toBe(moded);
    // Another folder's context is another stamp: only what is under the Dockerfile's folder counts.
    const sub = await Image.contextStamp(root, join(root, "sub"));
    put("app.txt", "edited again, outside sub/\n");
    expect(await Image.contextStamp(root, join(root, "sub"))).toBe(sub);
  });
});
