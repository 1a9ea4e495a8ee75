import type { DeliveryStatus, TaskState, TaskStatus } from '../contracts.js';
import type { Requirements } from '../host-facts.js';
import type { Receipt } from '../receipt.js';
import type { RedisClient } from '../redis.js';
import { type AuditInput, AuditLog } from './audit-log.js';
import { Cluster, type ControlMessage } from './cluster.js';
import { EventStream, type NewMissionEvent } from './events.js';
import { type LiveRef, liveOutputExists, liveWriter, readLiveOutput } from './live-output.js';
import { Missions, type NewMission } from './missions.js';
import { type ReleaseItem, Transitions } from './transitions.js';

export type { AuditInput } from './audit-log.js';
export type { MissionMeta, MissionRecord, MissionRowRaw } from './missions.js';
export type { SettleAction, SettleOutcome } from './transitions.js';

/**
 * flotilla's state in Redis, as the one object stages, hosts, the board and the CLI are given: each
 * call goes to the part that owns its keys — the mission's record (missions.ts), the transitions
 * hosts race on (transitions.ts), the audit trail and receipt (audit-log.ts), the event stream
 * (events.ts), and what hosts share beside missions (cluster.ts). The Redis client stays inside.
 */
export class MissionStore {
  private readonly missions: Missions;
  private readonly transitions: Transitions;
  private readonly trail: AuditLog;
  private readonly events: EventStream;
  private readonly cluster: Cluster;

  constructor(
    private readonly redis: RedisClient,
    readonly prefix: string,
    secret?: string,
  ) {
    this.missions = new Missions(redis, prefix, secret);
    this.transitions = new Transitions(redis, prefix);
    this.trail = new AuditLog(redis, prefix);
    this.events = new EventStream(redis, prefix);
    this.cluster = new Cluster(redis, prefix);
  }

  // A running CLI's live output (live-output.ts).

  liveWriter(ref: LiveRef) {
    return liveWriter(this.redis, this.prefix, ref);
  }

  readLiveOutput(ref: LiveRef, lastId: string, blockMs: number) {
    return readLiveOutput(this.redis, this.prefix, ref, lastId, blockMs);
  }

  liveOutputExists(ref: LiveRef) {
    return liveOutputExists(this.redis, this.prefix, ref);
  }

  // The mission's record (missions.ts).

  createMission(input: NewMission) {
    return this.missions.createMission(input);
  }

  missionExists(id: string) {
    return this.missions.missionExists(id);
  }

  getMission(id: string) {
    return this.missions.getMission(id);
  }

  getMissionMeta(id: string) {
    return this.missions.getMissionMeta(id);
  }

  getTasks(id: string) {
    return this.missions.getTasks(id);
  }

  getTask(id: string, taskId: string) {
    return this.missions.getTask(id, taskId);
  }

  getTaskStates(id: string, taskIds: readonly string[]) {
    return this.missions.getTaskStates(id, taskIds);
  }

  isCancelled(id: string) {
    return this.missions.isCancelled(id);
  }

  addCost(id: string, usd: number) {
    return this.missions.addCost(id, usd);
  }

  setMetaField(id: string, field: string, value: string) {
    return this.missions.setMetaField(id, field, value);
  }

  getMetaField(id: string, field: string) {
    return this.missions.getMetaField(id, field);
  }

  setDelivery(id: string, delivery: DeliveryStatus) {
    return this.missions.setDelivery(id, delivery);
  }

  missionRows(limit: number) {
    return this.missions.missionRows(limit);
  }

  listMissions(limit?: number) {
    return this.missions.listMissions(limit);
  }

  status(id: string) {
    return this.missions.status(id);
  }

  // Transitions of task state, each one Lua script (transitions.ts).

  prepareRelease(id: string, attempts: readonly ReleaseItem[]) {
    return this.transitions.prepareRelease(id, attempts);
  }

  mark(id: string, taskId: string, attempt: number, status: TaskStatus | null, patch?: Partial<TaskState>) {
    return this.transitions.mark(id, taskId, attempt, status, patch);
  }

  /** The gate's transition; its arguments are those of `Transitions.settle`, written out there. */
  settle(...args: Parameters<Transitions['settle']>) {
    return this.transitions.settle(...args);
  }

  cancel(id: string, now: string) {
    return this.transitions.cancel(id, now);
  }

  // The audit trail and the receipt (audit-log.ts).

  audit(id: string, entry: AuditInput) {
    return this.trail.audit(id, entry);
  }

  getTaskAudit(id: string, taskId: string) {
    return this.trail.getTaskAudit(id, taskId);
  }

  getAudit(id: string) {
    return this.trail.getAudit(id);
  }

  getAuditHead(id: string) {
    return this.trail.getAuditHead(id);
  }

  getReceipt(id: string) {
    return this.trail.getReceipt(id);
  }

  setReceipt(id: string, receipt: Receipt) {
    return this.trail.setReceipt(id, receipt);
  }

  // The event stream (events.ts).

  emit(event: NewMissionEvent) {
    return this.events.emit(event);
  }

  readEvents(id: string, lastId: string, blockMs: number) {
    return this.events.readEvents(id, lastId, blockMs);
  }

  lastEventId(id: string) {
    return this.events.lastEventId(id);
  }

  // What hosts share beside missions (cluster.ts).

  hosts() {
    return this.cluster.hosts();
  }

  liveHosts() {
    return this.cluster.liveHosts();
  }

  registerRequirements(sets: ReadonlyMap<string, Requirements>) {
    return this.cluster.registerRequirements(sets);
  }

  requirementSets() {
    return this.cluster.requirementSets();
  }

  publishControl(message: ControlMessage) {
    return this.cluster.publishControl(message);
  }

  tryLock(name: string, owner: string, ms: number) {
    return this.cluster.tryLock(name, owner, ms);
  }

  countHandback(jobId: string) {
    return this.cluster.countHandback(jobId);
  }

  jobsExist(jobKeys: readonly string[]) {
    return this.cluster.jobsExist(jobKeys);
  }

  jobsFailed(failedKey: string, jobIds: readonly string[]) {
    return this.cluster.jobsFailed(failedKey, jobIds);
  }
}
