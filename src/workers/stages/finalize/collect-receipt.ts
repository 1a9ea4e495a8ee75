import type { AuditEntry, MissionStatusJson } from '../../../shared/contracts.js';
import { integrationBranch } from '../../../shared/contracts.js';
import type { ReceiptBody } from '../../../shared/receipt.js';
import type { MissionRecord, MissionStore } from '../../../shared/store/mission-store.js';
import { buildReceipt } from './receipt.js';

/**
 * Reads what a receipt is built from out of mission state. Finalize builds the receipt it signs
 * with it; `flotilla verify` rebuilds one to name what a changed receipt claims that the trail
 * does not (given the tip the receipt names: the tip is checked against the repository instead).
 */
export async function collectReceipt(
  store: MissionStore,
  missionId: string,
  integrationTip: string | null,
): Promise<ReceiptBody> {
  return receiptBody(await readMissionEnd(store, missionId), integrationTip);
}

/** What finalize and the receipt read of a finished mission: one read of each, the audit whole. */
export interface MissionEnd {
  readonly record: MissionRecord;
  readonly status: MissionStatusJson;
  readonly audit: readonly AuditEntry[];
}

export async function readMissionEnd(store: MissionStore, missionId: string): Promise<MissionEnd> {
  const [record, status, audit] = await Promise.all([
    store.getMission(missionId),
    store.status(missionId),
    store.getAudit(missionId),
  ]);
  return { record, status, audit };
}

export function receiptBody(end: MissionEnd, integrationTip: string | null): ReceiptBody {
  const { meta, spec } = end.record;
  const { status, audit } = end;
  const missionId = meta.id;
  return buildReceipt({
    mission: {
      id: meta.id,
      goal: meta.goal,
      status: meta.status,
      repo: meta.repo,
      baseCommit: meta.baseCommit,
      branch: integrationBranch(missionId),
      createdAt: meta.createdAt,
      finishedAt: meta.finishedAt,
    },
    spec,
    integrationTip,
    tasks: status.tasks.map((task) => ({ id: task.id, status: task.status })),
    audit,
  });
}
