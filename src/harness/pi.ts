/**
 * Pi: PI_CODING_AGENT_DIR/models.json pins each built-in provider's baseUrl to the proxy (Pi
 * ignores ANTHROPIC_BASE_URL), rewritten before every turn; the placeholder sits in the
 * variable Pi reads (ANTHROPIC_OAUTH_TOKEN for an OAuth credential, whose shape also switches
 * Pi's request style); PI_OFFLINE stops its start-up network calls.
 */
import type { Harness } from "./types";

export const pi: Harness = {
  name: "pi",
  prepare(l) {
    const models = {
      providers: {
        anthropic: { baseUrl: l.proxyUrl },
        openai: { baseUrl: `${l.proxyUrl}/v1` },
        openrouter: { baseUrl: `${l.proxyUrl}/v1` },
      },
    };
    const provider = l.profile.wire === "openai" ? "openai" : "anthropic";
    const model = l.profile.model ? ["--provider", provider, "--model", l.profile.model] : ["--provider", provider];
    const turn = l.prompt !== undefined ? ["--mode", "json", "-p", l.prompt] : [];
    const resume = l.resume ? ["--session", l.resume] : [];
    return {
      command: ["pi", ...model, ...resume, ...turn, ...(l.args ?? [])],
      env: { PI_CODING_AGENT_DIR: l.configDir, [l.envVar]: l.placeholder, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1", PI_TELEMETRY: "0" },
      files: { "models.json": JSON.stringify(models, null, 2) },
    };
  },
};
