/**
 * Counters kept before the models were (issue 35): a store from then keeps every token, and its
 * counters are priced once by the profile's model of the upgrade — never again by a later edit.
 * New counters carry the model served, whatever the profile says.
 */
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config } from "../../src/config";
import { spentByTask, stampLegacy } from "../../src/spending";
import { open, Usage } from "../../src/store";
import { MIGRATIONS } from "../../src/store/migrations";

const config = (model: string) => Config.parse({ profiles: { claude: { model } } });
const SONNET = (21 * 3 + 13 * 15 + 8 * 0.3 + 5 * 3.75) / 1e6;
const OPUS = (21 * 15 + 13 * 75 + 8 * 1.5 + 5 * 18.75) / 1e6;

test("a store from before models: its counters are priced by the profile's model at the upgrade, once; new ones by the model served", () => {
  const file = join(mkdtempSync(join(tmpdir(), "lazy-legacy-")), "store.db");
  const old = new Database(file, { create: true });
  const before = MIGRATIONS.findIndex((m) => typeof m === "string" && m.includes("usage_days_models"));
  expect(before).toBeGreaterThan(0);
  for (const m of MIGRATIONS.slice(0, before)) typeof m === "string" ? old.exec(m) : m(old);
  old.exec(`PRAGMA user_version = ${before}`);
  old.exec(
    "INSERT INTO usage_days (day, task_id, profile, credential, requests, input_tokens, output_tokens, cache_read, cache_write) VALUES ('2026-01-02', 't1', 'claude', 'anthropic', 1, 21, 13, 8, 5)",
  );
  old.close();

  const db = open(file);
  expect(Usage.legacyProfiles(db)).toEqual(["claude"]);
  stampLegacy(db, config("claude-sonnet-4-5"));
  expect(Usage.legacyProfiles(db)).toEqual([]);
  const s = spentByTask(db, config("claude-sonnet-4-5"), "t1");
  expect(s).toMatchObject({ requests: 1, tokens: 47, unpriced: [] });
  expect(s.usd).toBeCloseTo(SONNET, 10);

  // A later edit of the profile's model prices nothing again.
  stampLegacy(db, config("claude-haiku-4-5"));
  expect(spentByTask(db, config("claude-haiku-4-5"), "t1").usd).toBeCloseTo(SONNET, 10);

  // A new counter of the same day, task and profile, served opus: its own price beside the old one.
  Usage.addToDay(db, "2026-01-02", "t1", "claude", "anthropic", "claude-opus-4-1", "15/75/1.5/18.75", OPUS, [1, 21, 13, 8, 5]);
  const both = spentByTask(db, config("claude-haiku-4-5"), "t1");
  expect(both.tokens).toBe(94);
  expect(both.usd).toBeCloseTo(SONNET + OPUS, 10);

  // A model with no price: named, its tokens counted, the priced part kept for a dollar budget.
  Usage.addToDay(db, "2026-01-02", "t1", "claude", "anthropic", "vendor-x", "", 0, [1, 10, 0, 0, 0]);
  const odd = spentByTask(db, config("claude-haiku-4-5"), "t1");
  expect(odd).toMatchObject({ tokens: 104, usd: null, unpriced: ["vendor-x"] });
  expect(odd.knownUsd).toBeCloseTo(SONNET + OPUS, 10);
  db.close();
});

test("a store from before dollars were kept: its counters are priced once at the upgrade, by that day's prices; a later [prices] entry moves nothing", () => {
  const file = join(mkdtempSync(join(tmpdir(), "lazy-unstamped-")), "store.db");
  const old = new Database(file, { create: true });
  const before = MIGRATIONS.findIndex((m) => typeof m === "string" && m.includes("usage_days_priced"));
  expect(before).toBeGreaterThan(0);
  for (const m of MIGRATIONS.slice(0, before)) typeof m === "string" ? old.exec(m) : m(old);
  old.exec(`PRAGMA user_version = ${before}`);
  old.exec(
    "INSERT INTO usage_days (day, task_id, profile, credential, model, requests, input_tokens, output_tokens, cache_read, cache_write) VALUES ('2026-01-02', 't1', 'claude', 'anthropic', 'claude-opus-4-1', 1, 21, 13, 8, 5), ('2026-01-02', 't1', 'claude', 'anthropic', 'vendor-x', 1, 10, 0, 0, 0)",
  );
  old.close();

  const db = open(file);
  expect(Usage.unstampedModels(db).sort()).toEqual(["claude-opus-4-1", "vendor-x"]);
  const plain = Config.parse({});
  stampLegacy(db, plain);
  expect(Usage.unstampedModels(db)).toEqual([]);
  const s = spentByTask(db, plain, "t1");
  expect(s).toMatchObject({ requests: 2, tokens: 57, usd: null, unpriced: ["vendor-x"] });
  expect(s.knownUsd).toBeCloseTo(OPUS, 10);

  // A price set afterwards prices later requests only: these stay as they were stamped.
  const priced = Config.parse({ prices: { "vendor-x": { input: 100, output: 100 }, "claude-opus-4-1": { input: 1, output: 1 } } });
  stampLegacy(db, priced);
  const again = spentByTask(db, priced, "t1");
  expect(again).toMatchObject({ usd: null, unpriced: ["vendor-x"] });
  expect(again.knownUsd).toBeCloseTo(OPUS, 10);
  db.close();
});
