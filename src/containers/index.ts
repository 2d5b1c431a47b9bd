/**
 * Everything lazy does with Docker, behind an interface of lazy's own (dockerode lives in
 * engine.ts and runtime.ts only): which engine, the project's network, the task image, and the
 * labelled task containers a restarted daemon finds again.
 */
export * as Engine from "./engine";
export * as Image from "./image";
export { Runtime, LABEL_PROJECT, LABEL_TASK, type Mount, type TaskContainerSpec, type ContainerInfo, type Network } from "./runtime";
