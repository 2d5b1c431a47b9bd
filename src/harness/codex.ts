/**
 * Codex: a provider block lazy owns in CODEX_HOME/config.toml, rewritten before every turn.
 * Not named "openai" (that switches on OpenAI-only behaviour), wire_api "responses", no
 * websockets, base_url the proxy, and the placeholder in OPENAI_API_KEY, which Codex sends as
 * a bearer header on every request.
 */
import { stringify } from "smol-toml";
import { LazyError } from "../util/errors";
import type { Harness } from "./types";

export const codex: Harness = {
  name: "codex",
  slot: (_profile, real) => ({ envVar: "OPENAI_API_KEY", shape: real.openrouter ? "openrouter" : "openai" }),
  prepare(l) {
    if (!/^https?:\/\/[^/]+/.test(l.proxyUrl))
      throw new LazyError("launch_refused", "Codex cannot be launched without the proxy's address; it would dial OpenAI unaudited. Run lazy doctor.");
    const config = {
      model: l.profile.model ?? "gpt-5",
      model_provider: "lazy",
      model_providers: {
        lazy: {
          name: "lazy proxy",
          base_url: `${l.proxyUrl}/v1`,
          env_key: "OPENAI_API_KEY",
          wire_api: "responses",
          supports_websockets: false,
          requires_openai_auth: false,
        },
      },
    };
    const turn = l.prompt !== undefined ? ["exec", "--json", "--skip-git-repo-check", ...(l.resume ? ["resume", l.resume] : []), l.prompt] : l.resume ? ["resume", l.resume] : [];
    return {
      command: ["codex", ...turn, ...(l.args ?? [])],
      env: { CODEX_HOME: l.configDir, OPENAI_API_KEY: l.placeholder },
      files: { "config.toml": `# Written by lazy before every turn; edits are overwritten.\n${stringify(config)}\n` },
    };
  },
};
