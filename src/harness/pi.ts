/**
 * Pi: PI_CODING_AGENT_DIR/models.json pins each built-in provider's baseUrl to the proxy (Pi
 * ignores ANTHROPIC_BASE_URL), rewritten before every turn; the placeholder sits in the
 * variable Pi reads (ANTHROPIC_OAUTH_TOKEN for an OAuth credential, whose shape also switches
 * Pi's request style); PI_OFFLINE stops its start-up network calls (and its installing of
 * packages a settings file names).
 *
 * In an agent-written worktree (lazy pair) `--no-extensions` stops Pi loading the folder's
 * .pi/extensions and the extensions its settings or packages name (lazy's own would be passed
 * with -e). Pi has no switch for the rest of .pi/settings.json, which it always reads: a
 * worktree whose settings choose what runs commands (shellPath, shellCommandPrefix, npmCommand)
 * is refused.
 */

import * as Mcp from "./mcp";
import type { Harness } from "./types";
import * as Worktree from "./worktree";

/** Settings that name a program Pi runs. */
const RUNS = ["shellPath", "shellCommandPrefix", "npmCommand"];
/** Settings whose code --no-extensions keeps out. */
const EXTENDS = ["extensions", "packages"];

export const pi: Harness = {
  name: "pi",
  coAuthor: "Pi agent (lazy) <noreply@lazy.invalid>",
  binary: "pi",
  slot(profile, real) {
    if (profile.wire === "openai") return { envVar: "OPENAI_API_KEY", shape: real.openrouter ? "openrouter" : "openai" };
    return real.kind === "oauth-token"
      ? { envVar: "ANTHROPIC_OAUTH_TOKEN", shape: "anthropic-oauth" }
      : { envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" };
  },
  prepare(l) {
    const provider = l.profile.wire === "openai" ? "openai" : "anthropic";
    // The profile's model is declared too, so Pi accepts any id the upstream serves (a model
    // server's own names, a model newer than Pi's list); Pi merges it with its built-ins.
    const declared = l.profile.model
      ? [
          {
            id: l.profile.model,
            name: l.profile.model,
            reasoning: false,
            input: ["text"],
            contextWindow: 200000,
            maxTokens: 32000,
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
          },
        ]
      : undefined;
    const models = {
      providers: {
        anthropic: { baseUrl: l.proxyUrl, ...(provider === "anthropic" && declared ? { models: declared } : {}) },
        openai: { baseUrl: `${l.proxyUrl}/v1`, ...(provider === "openai" && declared ? { models: declared } : {}) },
        openrouter: { baseUrl: `${l.proxyUrl}/v1` },
      },
    };
    const model = l.profile.model ? ["--provider", provider, "--model", l.profile.model] : ["--provider", provider];
    const turn = l.prompt !== undefined ? ["--mode", "json", "-p", l.prompt] : [];
    const resume = l.resume ? ["--session", l.resume] : [];
    const untrusted = l.untrustedCwd ? ["--no-extensions"] : [];
    // lazy's tools through lazy's own extension (Pi has no MCP), loaded by path.
    const mcp = l.mcp ? ["-e", `${l.configDir}/lazy-mcp.ts`] : [];
    return {
      command: ["pi", ...untrusted, ...mcp, ...model, ...resume, ...turn, ...(l.args ?? [])],
      env: {
        PI_CODING_AGENT_DIR: l.configDir,
        [l.envVar]: l.placeholder,
        PI_OFFLINE: "1",
        PI_SKIP_VERSION_CHECK: "1",
        PI_TELEMETRY: "0",
        ...(l.mcp ? { [Mcp.MCP_TOKEN_VAR]: l.mcp.token, [Mcp.MCP_URL_VAR]: l.mcp.url } : {}),
      },
      files: { "models.json": JSON.stringify(models, null, 2), ...(l.mcp ? { "lazy-mcp.ts": Mcp.PI_EXTENSION } : {}) },
    };
  },
  inspect(worktree) {
    const notLoaded = Worktree.entries(worktree, ".pi/extensions");
    if (Worktree.kind(worktree, ".pi/extensions") === "link") notLoaded.push(".pi/extensions (a link)");
    const refused: string[] = [];
    const settings = Worktree.json(worktree, ".pi/settings.json");
    if (settings && !settings.ok) refused.push(`.pi/settings.json (${settings.why}: Pi reads it, and lazy cannot check what it runs)`);
    if (settings?.ok) {
      const runs = RUNS.filter((k) => k in settings.value);
      if (runs.length) refused.push(`.pi/settings.json (sets ${runs.join(", ")}: a program Pi would run)`);
      const ext = EXTENDS.filter((k) => k in settings.value);
      if (ext.length) notLoaded.push(`.pi/settings.json (${ext.join(", ")})`);
    }
    return { notLoaded, refused };
  },
  sessions: ["sessions"],
};
