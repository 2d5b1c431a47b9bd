/**
 * An OTLP/HTTP trace receiver on loopback that decodes what it gets with the official protobuf
 * definitions (test/fixtures/opentelemetry-proto, from open-telemetry/opentelemetry-proto) through
 * protobufjs: what a collector would see, not what lazy meant to send. Its `mode` plays a
 * collector that answers, hangs, answers slowly, or answers with a huge body.
 */
import { join } from "node:path";
import protobuf from "protobufjs";

const PROTO_DIR = join(import.meta.dir, "..", "fixtures", "opentelemetry-proto");

export interface Span {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  start: bigint;
  end: bigint;
  attributes: Record<string, string | number | boolean>;
  events: { name: string; attributes: Record<string, string | number | boolean> }[];
  status: { code: number; message: string };
  resource: Record<string, string | number | boolean>;
}

let request: protobuf.Type | undefined;
async function requestType(): Promise<protobuf.Type> {
  if (request) return request;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => join(PROTO_DIR, target);
  await root.load("opentelemetry/proto/collector/trace/v1/trace_service.proto", { keepCase: true });
  request = root.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");
  return request;
}

type AnyValue = { string_value?: string; int_value?: string; double_value?: number; bool_value?: boolean };
const valueIn = (v: AnyValue | undefined): string | number | boolean =>
  v?.string_value ?? (v?.int_value !== undefined ? Number(v.int_value) : (v?.double_value ?? v?.bool_value ?? ""));
const attrs = (kvs: { key: string; value?: AnyValue }[] | undefined) =>
  Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueIn(kv.value)]));
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString("hex");

/** Every span of an ExportTraceServiceRequest's bytes, decoded with the official definitions. */
export async function decode(bytes: Uint8Array): Promise<Span[]> {
  const T = await requestType();
  const msg = T.toObject(T.decode(bytes), { longs: String, defaults: true }) as any;
  const out: Span[] = [];
  for (const rs of msg.resource_spans ?? [])
    for (const ss of rs.scope_spans ?? [])
      for (const s of ss.spans ?? [])
        out.push({
          traceId: hex(s.trace_id),
          spanId: hex(s.span_id),
          parentSpanId: hex(s.parent_span_id),
          name: s.name,
          kind: s.kind,
          start: BigInt(s.start_time_unix_nano),
          end: BigInt(s.end_time_unix_nano),
          attributes: attrs(s.attributes),
          events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attrs(e.attributes) })),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? "" },
          resource: attrs(rs.resource?.attributes),
        });
  return out;
}

export type Mode = "ok" | "hang" | "slow" | "huge";

export interface Receiver {
  url: string;
  port: number;
  spans: Span[];
  /** Every request body as it came (bytes), for greps. */
  bodies: Uint8Array[];
  requests: number;
  mode: Mode;
  close(): Promise<void>;
}

/** A receiver on 127.0.0.1 (an OS-chosen port, or `port`). */
export async function receiver(port = 0): Promise<Receiver> {
  const r: Receiver = {
    url: "",
    port: 0,
    spans: [],
    bodies: [],
    requests: 0,
    mode: "ok",
    close: async () => {
      server.stop(true);
    },
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    idleTimeout: 0,
    async fetch(req) {
      r.requests++;
      const body = new Uint8Array(await req.arrayBuffer());
      r.bodies.push(body);
      if (r.mode === "hang") return new Promise<Response>(() => {});
      if (r.mode === "slow") await Bun.sleep(20_000);
      if (r.mode === "huge") {
        // 64 MiB, as fast as the socket takes it.
        const chunk = new Uint8Array(1 << 20).fill(120);
        let n = 0;
        return new Response(
          new ReadableStream({
            pull(c) {
              if (n++ >= 64) c.close();
              else c.enqueue(chunk);
            },
          }),
          { headers: { "content-type": "application/x-protobuf" } },
        );
      }
      if (req.method !== "POST" || new URL(req.url).pathname !== "/v1/traces") return new Response("not here", { status: 404 });
      r.spans.push(...(await decode(body)));
      return new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } });
    },
  });
  r.port = server.port!;
  r.url = `http://127.0.0.1:${r.port}`;
  return r;
}
