import { type AgentRun, type InvokeInput, invokeAgent } from '../agent/invoke.js';
import type { Adapter } from '../shared/adapter.js';
import { renderAuditEvent } from '../shared/audit.js';
import type { HostContext } from './context.js';
import { recordStage } from './record.js';

/**
 * An agent run as a stage on this host starts it: the host records the CLI's process group,
 * guards flotilla's own directories, and applies `--sandbox`. Run and critic both use this.
 */
export function invokeOnHost(
  ctx: HostContext,
  input: Omit<InvokeInput, 'groups' | 'flotillaDirs' | 'sandbox'>,
): Promise<AgentRun> {
  return invokeAgent({
    ...input,
    groups: ctx.cliGroups,
    flotillaDirs: [ctx.config.home],
    ...(ctx.sandbox ? { sandbox: ctx.sandbox } : {}),
  });
}

/**
 * A CLI that changed files outside its checkout: the audit row (with whatever files the stage
 * keeps of the run) and the error line the stage fails with.
 */
export async function recordEscape(
  ctx: HostContext,
  ref: {
    readonly missionId: string;
    readonly taskId: string;
    readonly attempt: number;
    readonly stage: 'run' | 'critic';
  },
  adapter: Adapter,
  escaped: NonNullable<AgentRun['escaped']>,
  files?: Readonly<Record<string, string>>,
): Promise<string> {
  const event = {
    kind: 'escaped-checkout',
    cli: adapter.cli,
    cliName: adapter.displayName,
    ...escaped,
  } as const;
  const error = renderAuditEvent(event);
  ctx.logger.error(
    { missionId: ref.missionId, taskId: ref.taskId, attempt: ref.attempt, cli: adapter.cli },
    error,
  );
  await recordStage(ctx, ref, ref.stage, {
    cli: adapter.cli,
    event,
    ...(files ? { files: { ...files } } : {}),
  });
  return error;
}
