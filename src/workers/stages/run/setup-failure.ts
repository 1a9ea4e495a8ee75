/**
 * A task's setup failed before its CLI started: the attempt fails like one whose criterion failed,
 * with the command and the output's tail in the error (which the next prompt quotes) and the whole
 * output in the audit trail.
 */
import type { RunResult } from '../../../shared/contracts.js';
import { describeSetupFailure, type SetupOutcome } from '../../workspace/warm-checkout.js';
import type { HostContext } from '../context.js';
import { recordStage } from '../record.js';

export interface SetupFailedInput {
  readonly missionId: string;
  readonly taskId: string;
  readonly attempt: number;
  readonly cli: string;
  readonly setup: SetupOutcome & { readonly failure: NonNullable<SetupOutcome['failure']> };
  readonly startedAt: number;
}

export async function setupFailed(ctx: HostContext, input: SetupFailedInput): Promise<RunResult> {
  const { missionId, taskId, attempt, cli, setup } = input;
  await recordStage(ctx, { missionId, taskId, attempt }, 'run', {
    cli,
    event: { kind: 'setup-failed', ...setup.failure },
    files: { 'setup.txt': setup.log },
  });
  return {
    outcome: 'failed',
    cli,
    host: ctx.hostId,
    resultStatus: 'unknown',
    summary: 'setup failed',
    error: describeSetupFailure(setup.failure).slice(0, 2_000),
    durationMs: Date.now() - input.startedAt,
  };
}
