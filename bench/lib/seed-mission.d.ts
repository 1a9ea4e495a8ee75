import type { MissionSpec } from '../../src/shared/mission.js';
import type { MissionStore } from '../../src/shared/store/mission-store.js';
import type { HostInfo } from '../../src/shared/store/registry.js';

export declare const SERVED_CAPABILITIES: string[];
export declare const UNSERVED_CAPABILITY: string;
export declare const MISSING_CLI: string;
export declare function taskIdFor(i: number, n: number): string;
export declare function bigMissionSpec(n: number, seed?: number): MissionSpec;
export declare function seedMission(
  store: MissionStore,
  options: { id: string; tasks: number; now?: number; frontier?: number; seed?: number; elapsedMs?: number },
): Promise<MissionSpec>;
export declare function seedHosts(now?: number): HostInfo[];
