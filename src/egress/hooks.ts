/**
 * What the egress proxy's listener (server.ts) asks its owner (index.ts) about each connection,
 * and what it tells it: admitted, allowed and where to, a secret of lazy's in the bytes, the row.
 */
import type { Via } from "./chain";
import type { Head } from "./head";

/** What the listener asks its owner (index.ts). */
export interface Hooks {
  /** Whether this source may use the proxy at all (the project's own network only). */
  admit(src: string): boolean;
  /** Allowed? If so, where to dial. */
  decide(src: string, head: Extract<Head, { kind: "connect" | "http" }>): Promise<Dial | Refusal>;
  /** A placeholder or MCP token in these bytes (head or plain-HTTP body), if any: the connection is refused. */
  leak(src: string, text: string): Refusal | null;
  /** The connection is over: one audit row. */
  done(c: Done): void;
}

/** Where an allowed connection goes. */
export interface Dial {
  address: string;
  /** The port, when not the request's (a brokered tunnel goes to the broker's terminator). */
  port?: number;
  via?: Via;
  brokered?: Brokered;
}

/**
 * A CONNECT to a brokered host (src/broker): its TLS goes to lazy's terminator on loopback,
 * once the ClientHello's SNI names the CONNECT's host.
 */
export interface Brokered {
  /** The first client bytes: "need" more, null when the ClientHello names the CONNECT's host, else why not. */
  hello(bytes: Buffer): "need" | null | string;
  /** The tunnel to the terminator is open, dialed from this local port (the terminator knows the tunnel by it). */
  open(localPort: number): void;
  close(localPort: number): void;
}

export interface Refusal {
  status: number;
  why: string;
  remedy: string;
}

export interface Done {
  src: string;
  at: number;
  method: string;
  host: string;
  port: number;
  path: string;
  status: number;
  durationMs: number;
  bytesIn: number;
  bytesOut: number;
  note: string | null;
}
