import { describe, expect, test } from "bun:test";
import { kindOf, last4, STANDARD, validName } from "../../src/credentials";

describe("kindOf tells a credential's kind from its shape", () => {
  test.each([
    ["sk-ant-oat01-abcdef", "oauth-token"],
    ["sk-ant-api03-abcdef", "api-key"],
    ["sk-proj-abcdef", "api-key"],
    ["sk-or-v1-abcdef", "api-key"],
    ["sk-abcdef", "api-key"],
    ["crsr_abcdef", "api-key"],
    ["key_abcdef", "api-key"],
    ["ghp_abcdef", "unknown"],
    ["plain", "unknown"],
    ["", "unknown"],
  ] as const)("%s → %s", (value, kind) => {
    expect(kindOf(value)).toBe(kind);
  });
});

describe("validName", () => {
  test.each(["anthropic", "openai", "work-openai", "a", "0", "a.b_c-d", "x".repeat(64)])("accepts %s", (n) => {
    expect(validName(n)).toBe(true);
  });
  test.each(["", "-lead", ".hidden", "_x", "Upper", "has space", "x".repeat(65), "a/b", "ä"])("refuses %p", (n) => {
    expect(validName(n)).toBe(false);
  });
});

test("last4 shows at most the last 4 characters, and nothing of a short value", () => {
  expect(last4("sk-ant-api03-0123456789WXYZ")).toBe("WXYZ");
  expect(last4("abcdefghijkl")).toBe("ijkl");
  expect(last4("abcdefghijk")).toBe("");
  expect(last4("abcd")).toBe("");
});

test("the standard names fall back to the provider's usual variable", () => {
  expect(STANDARD).toEqual({
    anthropic: "ANTHROPIC_API_KEY",
    openai: "OPENAI_API_KEY",
    openrouter: "OPENROUTER_API_KEY",
    cursor: "CURSOR_API_KEY",
    ollama: "OLLAMA_API_KEY",
  });
});
