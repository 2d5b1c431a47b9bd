/**
 * The call pins under the orders Docker and the daemon really produce: Docker gives a dead call
 * container's address to the next container at once, and the dead one's pin is taken away a
 * moment later (after its removal). That late unpin must not lock the newcomer out.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { Grants } from "../../src/proxy/identity/grants";
import { pinnedTo, pinOwner } from "../../src/proxy/identity/pin";
import * as Log from "../../src/util/log";
import { removeStateDir, stateDir } from "../helpers/fixtures";

Log.configure({ stderr: false });

let dir: string;
beforeEach(() => {
  dir = stateDir("lazy-grants-hostile-");
});
afterEach(() => removeStateDir(dir));

test("a dead call container's late unpin leaves the container that got its address accepted", () => {
  const g = Grants.open(dir);
  const a = g.mint({
    role: "lazy",
    taskId: null,
    taskRef: null,
    profile: "claude",
    envVar: "ANTHROPIC_API_KEY",
    shape: "anthropic-api-key",
  });
  g.pinCall(a.token, "172.18.0.3"); // the warm container
  // It dies; the next call's container gets 172.18.0.3 and is pinned before the dead one's discard ends.
  g.pinCall(a.token, "172.18.0.3");
  g.unpinCall(a.token, "172.18.0.3"); // the dead one's discard
  expect(pinnedTo(g.lookup(a.token)!)).toEqual(["172.18.0.3"]);
  expect(pinOwner(g.lookup(a.token)!)).toBe("lazy's own calls (172.18.0.3)");
  g.unpinCall(a.token, "172.18.0.3"); // the new call's
  expect(pinnedTo(g.lookup(a.token)!)).toEqual([]);
  expect(g.unpinCall(a.token, "172.18.0.3")).toBe(false);
});
