/**
 * Everything lazy does with Docker, behind an interface of lazy's own; dockerode lives here.
 */
export * as Engine from "./engine";
