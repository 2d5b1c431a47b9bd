/**
 * Claude Code: the proxy as its API base address, exactly one credential variable (chosen by
 * the real credential's kind), nonessential traffic off so only model calls go out. Headless
 * turns use -p with stream-json, which needs --verbose.
 */
import type { Harness } from "./types";

export const claude: Harness = {
  name: "claude",
  slot(_profile, real) {
    if (real.bearer) return { envVar: "ANTHROPIC_AUTH_TOKEN", shape: real.openrouter ? "openrouter" : "generic" };
    return real.kind === "oauth-token" ? { envVar: "CLAUDE_CODE_OAUTH_TOKEN", shape: "anthropic-oauth" } : { envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" };
  },
  prepare(l) {
    const model = l.profile.model ? ["--model", l.profile.model] : [];
    const turn = l.prompt !== undefined ? ["-p", l.prompt, "--output-format", "stream-json", "--verbose"] : [];
    const resume = l.resume ? ["--resume", l.resume] : [];
    return {
      command: ["claude", ...model, ...resume, ...turn, ...(l.args ?? [])],
      env: {
        ANTHROPIC_BASE_URL: l.proxyUrl,
        [l.envVar]: l.placeholder,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CONFIG_DIR: l.configDir,
      },
      files: {
        // Interactive sessions ask once to approve an API key; approve the placeholder (its last
        // 20 characters, as Claude Code stores them) and skip the first-run screens.
        ".claude.json": JSON.stringify({ hasCompletedOnboarding: true, customApiKeyResponses: { approved: [l.placeholder.slice(-20)], rejected: [] } }, null, 2),
      },
    };
  },
};
