/** lazy memory: people keep project notes through the CLI; bad input is refused and loses nothing. */
import { afterAll, describe, expect, test } from "bun:test";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

describe("lazy memory", () => {
  test("add, list, rm; an empty note and an unknown number are clear errors", async () => {
    const p = new Project();
    expect((await p.ok(["memory"])).stdout).toContain("The project's memory is empty");
    expect((await p.ok(["memory", "add", "Tests run with bash scripts/test.sh"])).stdout).toBe("Kept as note 1.\n");
    await p.ok(["memory", "add", "The API lives in src/daemon/routes"]);
    const listed = (await p.ok(["memory"])).stdout;
    expect(listed).toMatch(/^ {2}1\. Tests run with bash scripts\/test\.sh {2}\(human, \d{4}-\d\d-\d\d\)\n {2}2\. The API lives/);
    const empty = await p.run(["memory", "add", "   "]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("A memory note needs some text.");
    const missing = await p.run(["memory", "rm", "9"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("No memory note 9");
    expect((await p.ok(["memory", "rm", "1"])).stdout).toContain("Removed note 1");
    const js = await p.json(["memory", "list", "--json"]);
    expect(js.notes.map((n: any) => n.text)).toEqual(["The API lives in src/daemon/routes"]);
  });
});
