/**
 * The engine room: talking to the Docker engine and recreating containers faithfully.
 * The updater depends on the Engine port (port.ts); createDockerEngine gives the real one.
 */

export type { EndpointSpec, ReplacementOptions, ReplacementSpec } from "./clone.ts";
export {
  compareApiVersions,
  isGeneratedHostname,
  MULTI_NETWORK_CREATE_API,
  replacementSpec,
  userMacAddress,
} from "./clone.ts";
export type { DockerConfig, Endpoint, TlsMaterial } from "./connection.ts";
export {
  CLIENT_MAX_API_VERSION,
  CLIENT_MIN_API_VERSION,
  normalizeApiVersion,
  parseDockerHost,
  tlsMaterial,
} from "./connection.ts";
export {
  createDockerEngine,
  DockerEngine,
  type EngineTimeouts,
  NEGOTIATION_TIMEOUT_MS,
  platformString,
  RESPONSE_TIMEOUT_MS,
  splitReference,
} from "./docker.ts";
export { demultiplexLogs, lastLines } from "./logs.ts";
export type * from "./port.ts";
export { ownContainerId } from "./self.ts";
export type { ServiceSummary, ServiceUpdateState, ServiceUpdateStatus, Swarm, SwarmState } from "./swarm.ts";
export { isOutOfSequence, TASK_LABELS, taskServiceOf } from "./swarm.ts";
