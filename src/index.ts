/**
 * flotilla's library API for scripts. Everything a script needs to submit, follow, cancel and
 * answer missions, run a worker host in-process, and read the contracts, exported by name.
 */

export { createBoardServer } from './board/server.js';
export {
  type ClientOptions,
  cancelMission,
  FlotillaClient,
  getMissionStatus,
  submitMission,
  waitForMission,
} from './producer/client.js';
export { loadMission, loadMissionOrThrow } from './producer/load-mission.js';
export { type Config, loadConfig } from './shared/config.js';
export type {
  AuditEntry,
  MissionEvent,
  MissionStatus,
  MissionStatusJson,
  TaskStatus,
} from './shared/contracts.js';
export { type ErrorCode, FlotillaError, formatProblem, type Problem } from './shared/errors.js';
export type { MissionSpec, TaskSpec } from './shared/mission.js';
export { formatSummary } from './shared/summary.js';
export { detectClis } from './workers/adapters/detect.js';
export { loadAdapters } from './workers/adapters/load-adapters.js';
export { type Host, type HostOptions, startHost } from './workers/host.js';
