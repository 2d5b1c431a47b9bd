/**
 * The second engine's image helper fails once, with its cause: an engine that cannot take the
 * image fails the first test that asks with what went wrong, and every later one at once with
 * the same cause, instead of each trying again (a fresh machine's failed build was 90 s a test).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { remoteImage } from "./second-engine";

const root = mkdtempSync(join(tmpdir(), "lazy-second-engine-test-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("an engine that cannot take lazy's image: the first ask names the cause, the next fails with it and does not try again", async () => {
  // Nothing listens on port 9: loading the image there fails (after a build, if the first engine lacks it).
  const nowhere = "tcp://127.0.0.1:9";
  const first = await remoteImage(nowhere, root).then(
    () => "loaded",
    (e: Error) => e.message,
  );
  expect(first).toContain(`is not on ${nowhere}`);
  expect(first).toContain("127.0.0.1:9");
  const again = await remoteImage(nowhere, root).then(
    () => "loaded",
    (e: Error) => e.message,
  );
  expect(again).toBe(`${first} (kept from an earlier test in this run)`);
}, 900_000);
