/**
 * What the network room needs of a Docker engine, handed in by containers/ (runtime.ts), which
 * sits above it: the engine, what kind it is (containers/engine.ts tells), where problems are
 * logged, the label lazy's projects carry, and the two engine helpers the firewall's helper
 * container uses.
 */
import type Docker from "dockerode";
import type { Logger } from "../util/log";

/** Only a "native" engine runs containers on this host's own network stack, where lazy sets the firewall. */
export type EngineKind = "native" | "desktop" | "rootless" | "remote";

/** The engine a network is made on, and where its problems are logged. */
export interface On {
  docker: Docker;
  kind: EngineKind;
  kindDetail: string;
  log: Logger;
  /** The label naming lazy's project on what it makes (containers/labels.ts). */
  projectLabel: string;
  /** Whether the engine has an image (the firewall helper runs in the task image). */
  imageExists(image: string): Promise<boolean>;
  /** A container's multiplexed log as text. */
  demux(raw: Buffer): string;
}

/** What running the firewall script in a helper container needs of the engine. */
export type HelperEngine = Pick<On, "docker" | "imageExists" | "demux">;
