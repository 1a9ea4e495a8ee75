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
  type SubmitOptions,
  type SubmittedMission,
  submitMission,
  waitForMission,
} from './client.js';
export { loadMission, loadMissionOrThrow } from './producer/load.js';
export { type Config, loadConfig } from './shared/config.js';
export type {
  AuditEntry,
  MissionEvent,
  MissionStatus,
  MissionStatusJson,
  TaskStatus,
} from './shared/contracts.js';
export { type ErrorCode, FlotillaError, formatProblem, type Problem } from './shared/errors.js';
export { formatEventLine } from './shared/event-line.js';
export { defineMission, type MissionInput } from './shared/mission.js';
export { detectClis } from './workers/agent/adapters/detect.js';
export { loadAdapters } from './workers/agent/adapters/load-adapters.js';
export { type Host, type HostOptions, startHost } from './workers/host/host.js';
export { formatSummary } from './workers/stages/finalize/summary.js';
