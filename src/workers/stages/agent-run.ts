import type { Adapter } from '../../shared/adapter.js';
import { renderAuditEvent } from '../../shared/audit.js';
import type { LiveRef } from '../../shared/store/live-output.js';
import { type AgentRun, type InvokeInput, invokeAgent, type OriginChange } from '../agent/invoke.js';
import type { HostContext } from './context.js';
import { recordStage } from './record.js';

/**
 * An agent run as a stage on this host starts it: the host records the CLI's process group,
 * guards flotilla's own directories, applies `--sandbox` and the operator's output cap
 * (FLOTILLA_MAX_OUTPUT). Run and critic both use this.
 */
export async function invokeOnHost(
  ctx: HostContext,
  input: Omit<InvokeInput, 'groups' | 'flotillaDirs' | 'sandbox' | 'maxOutputBytes'>,
  /** The attempt whose output `flotilla logs` and the board may follow while it runs. */
  live?: LiveRef,
): Promise<AgentRun> {
  const tee = live ? ctx.store.liveWriter(live) : null;
  const run = invokeAgent({
    ...input,
    ...(tee
      ? {
          onChunk: (stream: 'stdout' | 'stderr', chunk: Uint8Array) => {
            tee.push(stream, chunk);
            input.onChunk?.(stream, chunk);
          },
        }
      : {}),
    ...(ctx.config.maxOutputBytes !== undefined ? { maxOutputBytes: ctx.config.maxOutputBytes } : {}),
    groups: ctx.cliGroups,
    flotillaDirs: [ctx.config.home],
    ...(ctx.sandbox ? { sandbox: ctx.sandbox } : {}),
  });
  if (!tee) return run;
  try {
    const done = await run;
    const o = done.outcome;
    await tee.end(endOf(o));
    return done;
  } catch (error) {
    await tee.end('failed to run');
    throw error;
  }
}

/** How a run ended, in the words `flotilla logs` prints after its output. */
function endOf(o: AgentRun['outcome']): string {
  if (o.spawnError) return `could not start: ${o.spawnError}`;
  if (o.outputCapped !== undefined) return `stopped by flotilla: printed more than ${o.outputCapped} bytes`;
  if (o.timedOut) return 'timed out';
  if (o.cancelled) return 'cancelled';
  return o.exitCode === null ? 'killed' : `exited ${o.exitCode}`;
}

/** At most this many paths in a host log line; the audit event keeps them all. */
const LOGGED_PATHS = 20;

/**
 * Paths that changed in the repository flotilla runs in during a run. This attempt's own files
 * among them prove the CLI wrote outside its checkout: the audit row `escaped-checkout` (with
 * whatever files the stage keeps of the run), and the error line the stage fails with, fatally
 * (a retry would run the same CLI the same way, in the same place). Without them someone else (a
 * person editing that repository, another slot's CLI) may have made the changes: the audit row
 * `origin-changed` and a warning, and no error, so the attempt goes on.
 */
export async function recordOrigin(
  ctx: HostContext,
  ref: {
    readonly missionId: string;
    readonly taskId: string;
    readonly attempt: number;
    readonly stage: 'run' | 'critic';
  },
  adapter: Adapter,
  origin: OriginChange,
  files?: Readonly<Record<string, string>>,
): Promise<string | undefined> {
  const escaped = origin.own.length > 0;
  const common = { cli: adapter.cli, cliName: adapter.displayName, root: origin.root, paths: origin.paths };
  const event = escaped
    ? ({ kind: 'escaped-checkout', ...common, own: origin.own } as const)
    : ({ kind: 'origin-changed', ...common } as const);
  const message = renderAuditEvent(event);
  const fields = {
    missionId: ref.missionId,
    taskId: ref.taskId,
    attempt: ref.attempt,
    cli: adapter.cli,
    root: origin.root,
    paths: origin.paths.slice(0, LOGGED_PATHS),
  };
  if (escaped) ctx.logger.error(fields, message);
  else ctx.logger.warn(fields, message);
  await recordStage(ctx, ref, ref.stage, {
    cli: adapter.cli,
    event,
    ...(escaped && files ? { files: { ...files } } : {}),
  });
  return escaped ? message : undefined;
}
