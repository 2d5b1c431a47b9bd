/**
 * Everything lazy does with Docker, behind an interface of lazy's own (`Runtime`; dockerode
 * never leaves this folder but for the network room, which gets the engine handed in): which engine (the project's network and its firewall are the
 * network room's, src/network, which this folder drives), the task image, and the labelled task containers a restarted
 * daemon finds again.
 */

export * as BaseImage from "./base-image";
export { BIN, caMount, containerEnvOf, linuxBinary, taskMounts } from "./container-spec";
export * as Engine from "./engine";
export * as Image from "./image";
export { LABEL_IMAGE, LABEL_PROJECT, LABEL_TASK } from "./labels";
export { bindFor, type Gateway, imageDue, ProjectContainers, type ProjectDeps, taskImage } from "./project";
export { type ContainerInfo, type Mount, Runtime, type TaskContainerSpec } from "./runtime";
export * as Tar from "./tar";
