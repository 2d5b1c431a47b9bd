// Run by a prompt-injected agent inside its task container (test/attacks/proxy-identity.test.ts):
// it tries to use lazy's proxy with a credential that is not its placeholder, and to carry its
// placeholder upstream beside another credential. Writes what it got to proxy-identity.json.
import { writeFileSync } from "node:fs";

const base = process.env.ANTHROPIC_BASE_URL;
const placeholder = process.env.ANTHROPIC_API_KEY ?? process.env.ANTHROPIC_AUTH_TOKEN ?? process.env.CLAUDE_CODE_OAUTH_TOKEN;
const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 5, messages: [{ role: "user", content: "zq-identity-probe-zq" }] });
const post = async (headers) => {
  const res = await fetch(`${base}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
    body,
  });
  return { status: res.status, text: (await res.text()).slice(0, 500) };
};
const out = { base: !!base, placeholder: !!placeholder };
out.own = await post({ "x-api-key": process.argv[2] });
out.beside = await post({ "x-api-key": "not-a-key-at-all", authorization: `Bearer ${placeholder}` });
out.ownBearer = await post({ authorization: `Bearer ${process.argv[2]}` });
writeFileSync("proxy-identity.json", JSON.stringify(out, null, 2));
