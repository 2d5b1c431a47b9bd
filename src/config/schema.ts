/**
 * The one schema of lazy.toml: type, validator and documentation at once. Every field has a
 * description; `lazy init` writes its starter from the same words. Unknown keys are errors.
 * Keys named here are a contract scripts and docs rely on: add keys, never rename these.
 */
import { z } from "zod";
import { parseAllow } from "./allow";
import { fallbackProblems } from "./fallbacks";
import { ContainerLimits, ProjectLimits } from "./limits";
import { Services } from "./services";

export const HARNESSES = ["claude", "codex", "cursor", "pi"] as const;
export const WIRES = ["anthropic", "openai"] as const;
/**
 * How an upstream can fail, as provider health counts it (proxy/meters/health.ts) and as a fallback's
 * `on` names it: "429" a short rate limit, "quota" the credential's window or balance used up
 * (a fallback with another credential is just what helps then). A failed TLS handshake counts
 * as "connect".
 */
export const FAILURE_KINDS = ["reset", "timeout", "connect", "5xx", "529", "429", "quota"] as const;
export const FALLBACK_ON = FAILURE_KINDS;
/** The trailers lazy accept may add to a merge commit ([provenance] trailers). */
export const PROVENANCE_TRAILERS = ["Lazy-Task", "Lazy-Model", "Lazy-Candidate", "Co-Authored-By"] as const;

const origin = (what: string) =>
  z.string().refine((v) => isHttpUrl(v), { message: `expected an http(s) URL for ${what}, like "https://api.example.com"` });

const port = z.number().int().min(0).max(65535);
const profileName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,47}$/, "expected a profile name (lowercase letters, digits, - and _)");
const credentialName = z
  .string()
  .regex(/^([a-z0-9][a-z0-9._-]{0,63})$/, 'expected a credential name such as "anthropic" or "work-openai", or "none"');

export const Server = z
  .strictObject({
    bind: z
      .string()
      .min(1)
      .default("127.0.0.1")
      .describe("Interface the daemon's API and dashboard listen on. Loopback by default: nothing is reachable from other machines."),
    port: port.default(26024).describe("First port to try for the daemon; when taken, lazy probes upward."),
    web: z.boolean().default(true).describe("Serve the dashboard. false turns it off (status then says Web: off)."),
  })
  .describe("The daemon's HTTP listener: API, dashboard and live updates.");

export const Fallback = z
  .strictObject({
    name: z.string().min(1).describe("Name shown in errors and the audit trail."),
    endpoint: origin("the fallback endpoint").describe("Where rerouted requests go."),
    wire: z.enum(WIRES).describe("The API the endpoint speaks: it must be the primary upstream's, anthropic."),
    credential: credentialName
      .optional()
      .describe('Credential to send there; "none" for a server that needs none. Inferred from the host when absent.'),
    model: z.string().min(1).optional().describe("Model to ask the fallback for."),
    on: z
      .array(z.enum(FALLBACK_ON))
      .min(1)
      .default(["reset", "timeout", "connect", "5xx", "529"])
      .describe(
        'Which failures of the hop before reroute here: reset, timeout, connect, 5xx, 529, quota (a short rate limit, "429", never does).',
      ),
  })
  .describe("An upstream that takes over when the primary fails in one of the listed ways.");

export const Plugin = z
  .strictObject({
    name: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,47}$/, "expected a plugin name (lowercase letters, digits, - and _)")
      .describe("Name shown in the audit trail, in errors and by lazy doctor."),
    path: z
      .string()
      .min(1)
      .describe(
        "The module, installed under the lazy home's plugins folder (~/.lazy/plugins/NAME.ts; a relative path is taken from there). Never a file in a repository or the project, which every task container can write.",
      ),
    timeout_ms: z
      .number()
      .int()
      .min(1)
      .max(30_000)
      .default(1000)
      .describe("How long the plugin may take per request; past it the request fails (lazy's proxy failed), never passes."),
  })
  .describe("A request plugin: its default export sees each outbound model request before the credential goes in.");

export const ProxyConfig = z
  .strictObject({
    bind: z.string().min(1).default("127.0.0.1").describe("Interface the model proxy listens on for host clients. Loopback by default."),
    port: port.default(26124).describe("First port to try for the proxy; when taken, lazy probes upward."),
    remote_bind: z
      .string()
      .regex(/^\d{1,3}(\.\d{1,3}){3}$/, "expected an IPv4 address of this host")
      // A container that reached the proxy from loopback would pass for a session on this
      // machine (a host or builder placeholder, a builder's MCP token, proxy/identity/pin.ts).
      .refine(
        (a) => !a.startsWith("127."),
        "a loopback address: containers reaching the proxy there would pass for sessions on this machine; give an address of this host that the engine's containers route to",
      )
      .optional()
      .describe(
        "An IPv4 address of this host that a remote Docker engine's containers can route to (DOCKER_HOST=tcp://…): the proxy and MCP listen there for them. Needed only for a remote engine; placeholders are not pinned to containers there.",
      ),
    upstreams: z
      .strictObject({
        anthropic: origin("upstreams.anthropic").optional().describe("Origin that replaces https://api.anthropic.com."),
        openai: origin("upstreams.openai").optional().describe("Origin that replaces https://api.openai.com."),
        cursor: origin("upstreams.cursor").optional().describe("Origin that replaces https://api2.cursor.sh."),
        ollama: origin("upstreams.ollama")
          .optional()
          .describe("Origin that replaces https://ollama.com for profiles on hosted Ollama; they still bill the ollama credential."),
        openrouter: origin("upstreams.openrouter")
          .optional()
          .describe("Origin that replaces https://openrouter.ai for profiles on OpenRouter; they still bill the openrouter credential."),
      })
      .default({})
      .describe("Override the built-in providers' addresses (a gateway, or a test server)."),
    fallback: z.array(Fallback).default([]).describe("Ordered fallbacks for the primary upstream."),
    plugins: z
      .array(Plugin)
      .max(16)
      .default([])
      .describe("Request plugins, run in this order on every model request (README: Request plugins)."),
    first_byte_timeout_s: z
      .number()
      .min(1)
      .default(600)
      .describe(
        "How long a provider may think before its response headers arrive; then the agent gets a 504 naming it. Streams are never cut once they flow.",
      ),
    audit: z
      .strictObject({
        max_rows: z.number().int().min(100).default(100_000).describe("Audit rows kept; the oldest go first."),
        max_age_days: z.number().min(0.01).default(30).describe("Audit rows older than this are dropped."),
        max_refusal_lines: z
          .number()
          .int()
          .min(100)
          .default(10_000)
          .describe(
            "Lines of refusals of callers lazy cannot attribute (no credential, an unknown placeholder, …) kept, each the count of one minute, source, reason and status; the oldest go first. They never count against max_rows.",
          ),
      })
      .default({ max_rows: 100_000, max_age_days: 30, max_refusal_lines: 10_000 })
      .describe("Bounds of the proxy's audit trail. Token totals per task outlive it."),
  })
  .describe("The always-on model proxy every agent talks to.");

export const Profile = z
  .strictObject({
    harness: z
      .enum(HARNESSES)
      .optional()
      .describe("Which agent runs: claude, codex, cursor or pi. Required unless the profile is named after a built-in one."),
    model: z.string().min(1).optional().describe("Model the harness asks for."),
    models: z
      .array(
        z
          .string()
          .regex(/^[\x21-\x7e]{1,128}$/, "expected a model id (printable characters, no spaces, at most 128)")
          .describe("A model id, as the request body names it."),
      )
      .min(1)
      .optional()
      .describe(
        "The only models this profile's requests may ask for (a dated snapshot of one, like claude-sonnet-4-5-20250929, counts as it). Any other is refused with 403 before it reaches the provider. List every model the harness asks for (Claude Code also asks a small one, e.g. claude-haiku-4-5). Not for cursor profiles.",
      ),
    endpoint: origin("the profile endpoint")
      .optional()
      .describe("Upstream this profile's traffic goes to (a provider, or a model server you run)."),
    wire: z.enum(WIRES).optional().describe("The API the endpoint speaks. Defaults from the harness."),
    credential: credentialName
      .optional()
      .describe(
        'Stored credential this profile bills (lazy auth set NAME); "none" for a local model server. Inferred from the endpoint when absent.',
      ),
  })
  .describe("An agent profile: a harness, a model and where its traffic goes.");

/** Dollars per million tokens. */
const dollars = z.number().min(0).max(10_000);

/** What lazy's default task image is built FROM when [container] base is not set. */
export const DEFAULT_BASE = "debian:bookworm";
/** The profile tasks run on when neither the task nor [models.roles] agent names one. */
const DEFAULT_AGENT = "claude";

export const Container = z
  .strictObject({
    image: z
      .string()
      .min(1)
      .optional()
      .describe("Image to run task containers from, instead of lazy's default (its harness must be installed in it)."),
    dockerfile: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Project Dockerfile to build the task image from, instead of lazy's default (path relative to the project root). Its build context is the files of its folder that git tracks or would track: ignored files stay out. The image is built again when the Dockerfile or a file of its context changes.",
      ),
    base: z
      .string()
      .min(1)
      .default(DEFAULT_BASE)
      .describe(
        `Base image lazy's default task image is built FROM (lazy adds git and node where it lacks them, and the harnesses the profiles use). Not used with image or dockerfile.`,
      ),
    setup: z.string().min(1).optional().describe("Command run in a new worktree before the first turn (e.g. npm ci)."),
    allow_metadata: z
      .boolean()
      .default(false)
      .describe(
        "Let task containers reach link-local addresses (169.254.0.0/16, fe80::/10, fd00:ec2::254), where a cloud VM's metadata service hands out the host's own credentials. Off: lazy's firewall rules drop them. Takes effect with network = \"open\" (the fence drops them otherwise).",
      ),
    inherit_network_env: z
      .boolean()
      .default(true)
      .describe(
        "Give image builds and task containers the host's extra CA certificates (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, /usr/local/share/ca-certificates) and its HTTP_PROXY/HTTPS_PROXY/NO_PROXY (under the fence, builds and containers go through lazy's egress proxy instead, which chains to the host's; a build with build_network = \"host\" gets the host's proxy itself). Off: builds and containers get none of it.",
      ),
    limits: ContainerLimits.default(ContainerLimits.parse({})),
    build_network: z
      .enum(["project", "host"])
      .default("project")
      .describe(
        'Where an image build\'s RUN steps run: "project" (the default) on the project\'s own network, fenced like task containers (under network = "allowlist" they reach only the hosts in allow, through lazy\'s egress proxy as HTTP_PROXY/HTTPS_PROXY, which chains to the host\'s own proxy); "host" on the host\'s network, reaching whatever the host reaches, its loopback included (a proxy only the host can use). lazy doctor names "host" as a finding.',
      ),
    network: z
      .enum(["allowlist", "open", "none", "observe"])
      .default("allowlist")
      .describe(
        'What task containers reach besides lazy\'s model proxy and MCP: "allowlist" only the hosts in allow, through lazy\'s egress proxy (HTTP_PROXY); "observe" any host through it, each connection recorded (lazy egress suggest); "none" nothing else; "open" anything (no fence).',
      ),
    allow: z
      .array(
        z.string().superRefine((v, ctx) => {
          const e = parseAllow(v);
          if ("error" in e) ctx.addIssue({ code: "custom", message: e.error });
        }),
      )
      .default([])
      .describe(
        'Hosts task containers may reach through the egress proxy under network = "allowlist": "host" (ports 443 and 80), "host:port", "*.domain". Added to the built-in list of package registries and git hosts.',
      ),
    allow_defaults: z
      .boolean()
      .default(true)
      .describe("Include the built-in list of package registries and git hosts (npm, PyPI, Debian, GitHub, ...) in allow."),
  })
  .refine((c) => !(c.image && c.dockerfile), { message: "set either image or dockerfile, not both" })
  .describe("How task containers are made.");

export const Notify = z
  .strictObject({
    webhook: z
      .string()
      .refine((v) => isHttpUrl(v), { message: 'expected an http(s) URL for notify.webhook, like "https://hooks.example.com/lazy"' })
      .optional()
      .describe(
        "URL that gets a JSON POST when a task starts waiting, finishes or fails (tried 4 times, then logged). Its path may carry a secret: lazy logs only its origin.",
      ),
    webhook_credential: credentialName
      .optional()
      .describe(
        "Instead of webhook: the name of a stored credential (lazy auth set NAME, the URL on stdin) holding the webhook URL, so the secret is not in lazy.toml, which every task container can read.",
      ),
    desktop: z
      .boolean()
      .default(false)
      .describe(
        "Show a desktop notification for the same events (notify-send on Linux, osascript on macOS); lazy doctor warns when neither is on PATH.",
      ),
  })
  .describe("Tell someone when a task needs a human: it waits, is done, or failed.");

export const Config = z
  .strictObject({
    server: Server.default(Server.parse({})),
    proxy: ProxyConfig.default(ProxyConfig.parse({})),
    profiles: z
      .record(profileName, Profile)
      .default({})
      .describe("Agent profiles by name; claude, codex, cursor and pi exist without any config."),
    models: z
      .strictObject({
        roles: z
          .strictObject({
            agent: profileName.default(DEFAULT_AGENT).describe("Profile used for tasks that name none, and for lazy's own model calls."),
            builder: profileName.optional().describe("Profile of a builder session (lazy build); the agent one when absent."),
          })
          .default({ agent: DEFAULT_AGENT })
          .describe("Which profile plays which role."),
      })
      .default({ roles: { agent: DEFAULT_AGENT } })
      .describe("Model roles."),
    // zod 4's .default({}) would skip the inner defaults (allow_metadata).
    container: Container.default(Container.parse({})),
    usage_pause: z
      .strictObject({
        threshold: z
          .number()
          .min(1)
          .max(100)
          .optional()
          .describe("Percent of a subscription window past which lazy starts no new turn on that credential (every window)."),
        "5h": z
          .number()
          .min(1)
          .max(100)
          .optional()
          .describe("Threshold for the 5-hour window (Claude five_hour, Codex primary); overrides threshold."),
        "7d": z
          .number()
          .min(1)
          .max(100)
          .optional()
          .describe("Threshold for the 7-day window (Claude seven_day, Codex secondary); overrides threshold."),
      })
      .default({})
      .describe("Hold new turns when a subscription window is nearly used."),
    budget: z
      .strictObject({
        per_task_tokens: z
          .number()
          .int()
          .min(0)
          .optional()
          .describe(
            "Tokens (input, output and cache, all counted) one task may spend before its turn is stopped; lazy task budget T +N raises it.",
          ),
        per_day_tokens: z.number().int().min(0).optional().describe("Tokens all of the project's tasks may spend in a UTC day."),
        per_task_usd: z.number().min(0).optional().describe("Dollars one task may spend, where lazy knows the model's price."),
        per_day_usd: z.number().min(0).optional().describe("Dollars all tasks may spend in a UTC day, where lazy knows the prices."),
      })
      .default({})
      .describe("Token budgets: a task that reaches one is stopped at its next request and waits (reason budget)."),
    prices: z
      .record(
        z.string().regex(/^[\x21-\x7e]{1,128}$/, "expected a model id (printable characters, no spaces, at most 128)"),
        z
          .strictObject({
            input: dollars.describe("Dollars per million input tokens (billed at the full rate)."),
            output: dollars.describe("Dollars per million output tokens."),
            cache_read: dollars.optional().describe("Dollars per million tokens read from the prompt cache; the input price when absent."),
            cache_write: dollars
              .optional()
              .describe("Dollars per million tokens written to the prompt cache; the input price when absent."),
          })
          .describe("One model's price, per million tokens."),
      )
      .default({})
      .describe(
        "Prices of models lazy has none for, or yours (a negotiated rate, a model you serve), by the exact model id an answer names; they come before lazy's table. A request is priced once, when it is counted: a later edit prices only later requests.",
      ),
    limits: ProjectLimits.default(ProjectLimits.parse({})),
    build: z
      .strictObject({
        max_tasks: z
          .number()
          .int()
          .min(0)
          .max(1000)
          .default(10)
          .describe(
            "Tasks one builder session (lazy build) may create with task_create, and start with task_start; past it the agent's call is refused, naming this key. 0: none.",
          ),
      })
      .default({ max_tasks: 10 })
      .describe("Builder sessions (lazy build): what their agent may make and start."),
    notify: Notify.default(Notify.parse({})),
    review: z
      .strictObject({
        check: z
          .string()
          .min(1)
          .max(4096)
          .optional()
          .describe(
            'A shell command that judges a candidate (e.g. "bun test"): lazy compare runs it in a fresh container on the candidate\'s worktree, never on the host; exit 0 passes. Needs lazy trust, like every command lazy.toml names.',
          ),
      })
      .default({})
      .describe("How lazy compare judges best-of-N candidates."),
    provenance: z
      .strictObject({
        trailers: z
          .array(z.enum(PROVENANCE_TRAILERS))
          .default([...PROVENANCE_TRAILERS])
          .describe(
            "Trailers lazy accept adds to the merge commit: Lazy-Task, Lazy-Model, Lazy-Candidate (best-of-N) and Co-Authored-By (kept or added). [] adds none.",
          ),
        prompts: z
          .boolean()
          .default(true)
          .describe(
            "Keep the prompts and review comments that asked for a change in lazy trace, lazy export and the trace records; false leaves them out.",
          ),
      })
      .default({ trailers: [...PROVENANCE_TRAILERS], prompts: true })
      .describe(
        "Where each agent commit came from: trace records (git notes under refs/notes/agent-trace), trailers, lazy trace and lazy export.",
      ),
    telemetry: z
      .strictObject({
        otlp: z
          .string()
          .refine((v) => isHttpUrl(v), { message: 'expected an http(s) URL for telemetry.otlp, like "http://127.0.0.1:4318"' })
          .optional()
          .describe(
            "OTLP/HTTP endpoint (a collector's base URL; lazy posts protobuf to its /v1/traces) that gets an OpenTelemetry span per turn, model call and tool call, named by the GenAI conventions, when each turn ends. Spans carry no prompt, completion, tool input or output, URL path or secret. Off when absent. Needs lazy trust: it says where data goes.",
          ),
      })
      .default({})
      .describe("OpenTelemetry export of what agents do (off by default)."),
    service: Services,
  })
  .describe("lazy.toml, at the project root.");

export type Config = z.infer<typeof Config>;

/**
 * Checks across fields. They run on the raw document, beside the schema rather than inside
 * it, because zod skips refinements on an object that has other problems and every problem
 * must be listed at once.
 */
export function crossCheck(raw: unknown): { path: (string | number)[]; message: string }[] {
  const out: { path: (string | number)[]; message: string }[] = [];
  const doc = (raw ?? {}) as { profiles?: unknown; models?: { roles?: Record<string, unknown> } };
  const profiles = doc.profiles && typeof doc.profiles === "object" ? (doc.profiles as Record<string, Record<string, unknown>>) : {};
  const builtin = (n: string) => (HARNESSES as readonly string[]).includes(n);
  for (const [name, p] of Object.entries(profiles)) {
    if (!p || typeof p !== "object") continue;
    if (p.harness === undefined && !builtin(name))
      out.push({
        path: ["profiles", name],
        message: `missing: expected harness = one of ${HARNESSES.join(", ")} (only built-in profile names may omit it)`,
      });
    const harness = typeof p.harness === "string" ? p.harness : name;
    if (p.wire !== undefined && harness === "codex" && p.wire !== "openai")
      out.push({ path: ["profiles", name, "wire"], message: 'expected "openai": codex speaks only the OpenAI Responses wire' });
    if (Array.isArray(p.models) && harness === "cursor")
      out.push({
        path: ["profiles", name, "models"],
        message: "cursor-agent speaks Cursor's own protocol, whose model lazy does not read: remove models",
      });
    if (
      Array.isArray(p.models) &&
      typeof p.model === "string" &&
      !p.models.some((m) => m === p.model || m === String(p.model).replace(/-\d{8}$/, ""))
    )
      out.push({ path: ["profiles", name, "models"], message: `expected the profile's model "${p.model}" among its models` });
    if (p.wire !== undefined && harness === "claude" && p.wire !== "anthropic")
      out.push({ path: ["profiles", name, "wire"], message: 'expected "anthropic": Claude Code speaks only the Anthropic wire' });
  }
  const notify = (doc as { notify?: Record<string, unknown> }).notify;
  if (notify && typeof notify === "object" && notify.webhook !== undefined && notify.webhook_credential !== undefined)
    out.push({ path: ["notify", "webhook_credential"], message: "set either webhook or webhook_credential, not both" });
  for (const role of ["agent", "builder"]) {
    const named = doc.models?.roles?.[role];
    if (typeof named === "string" && !(named in profiles) && !builtin(named))
      out.push({ path: ["models", "roles", role], message: `expected the name of a profile; "${named}" is not defined` });
  }
  out.push(...fallbackProblems(raw));
  return out;
}
export type Profile = z.infer<typeof Profile>;
export type Fallback = z.infer<typeof Fallback>;
export type Plugin = z.infer<typeof Plugin>;
export type Notify = z.infer<typeof Notify>;

function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === "http:" || u.protocol === "https:") && !!u.hostname;
  } catch {
    return false;
  }
}
