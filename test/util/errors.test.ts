/**
 * Errors as data: a refusal the core makes carries its code and facts and no sentence of its
 * own; the voice of the process it is in words it, and the API's answer words it again from the
 * facts and carries them.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { inOurWords } from "../../src/cli/words";
import { type ErrorCode, type Facts, LazyError, speak } from "../../src/util/errors";

const facts: Facts = { reason: "credential_not_stored", profile: "codex", credential: "openai" };
const plain = (code: ErrorCode, f: Facts) => `${code}: ${JSON.stringify(f)}`;

// Each test speaks in a voice of its own; the process's voice (another test file's, in the same
// process) is put back after it.
let before: ReturnType<typeof speak>;
beforeEach(() => {
  before = speak(plain);
});
afterEach(() => speak(before));

describe("speak", () => {
  test("returns the voice it replaced, so whoever installed one for a while puts the one before back", () => {
    const mine = (code: ErrorCode) => `mine: ${code}`;
    expect(speak(mine)).toBe(plain);
    expect(LazyError.of("credential_missing", facts).message).toBe("mine: credential_missing");
    expect(speak(plain)).toBe(mine);
  });
});

describe("LazyError.of", () => {
  test("carries the code and the facts; with no voice installed its message is only those", () => {
    const e = LazyError.of("credential_missing", facts);
    expect(e.code).toBe("credential_missing");
    expect(e.facts).toEqual(facts);
    expect(e.message).toBe('credential_missing: {"reason":"credential_not_stored","profile":"codex","credential":"openai"}');
  });

  test("the process's voice words it; the API's answer words it again from the facts and carries them", () => {
    speak((_c, f) => `voice of the process: ${f.reason}`);
    const e = LazyError.of("credential_missing", facts, ["a detail"]);
    expect(e.message).toBe("voice of the process: credential_not_stored");
    const body = e.answer((_c, f) => `the API's words for ${f.reason}`);
    expect(body).toEqual({
      error: { code: "credential_missing", message: "the API's words for credential_not_stored", details: ["a detail"], facts },
    });
  });

  test("facts survive the wire: fromJSON keeps them, and a message without facts stays as it was", () => {
    const back = LazyError.fromJSON(LazyError.of("credential_missing", facts).toJSON(), "fallback");
    expect(back.facts).toEqual(facts);
    expect(back.code).toBe("credential_missing");
    const old = LazyError.fromJSON(new LazyError("not_found", "No task x.").toJSON(), "fallback");
    expect(old.facts).toBeUndefined();
    expect(old.message).toBe("No task x.");
  });
});

describe("a refusal from a daemon of another version", () => {
  test("a reason this CLI has no words for keeps the daemon's own words, rather than failing", () => {
    const e = new LazyError("preflight_refused", "The daemon's own words, cause and remedy.", ["a detail"], {
      reason: "from_a_newer_daemon",
    } as unknown as Facts);
    const said = inOurWords(e);
    expect(said.message).toBe("The daemon's own words, cause and remedy.");
    expect(said.code).toBe("preflight_refused");
    expect(said.details).toEqual(["a detail"]);
  });
});
