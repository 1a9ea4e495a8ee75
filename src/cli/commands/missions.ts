import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { FlotillaClient } from '../../client.js';
import { alreadyDecided } from '../../producer/approve.js';
import { loadMission } from '../../producer/load.js';
import type { Config } from '../../shared/config.js';
import { ATTEMPT_REF_PREFIX, type DeliveryStatus } from '../../shared/contracts.js';
import { formatProblem } from '../../shared/errors.js';
import { formatEventLine } from '../../shared/event-line.js';
import type { HostFacts } from '../../shared/host-facts.js';
import { listHosts } from '../../shared/store/registry.js';
import { exitCodeForStatus, followMission, watchMission } from '../follow.js';
import type { Io } from '../io.js';
import { renderTable } from '../progress.js';
import { adapterCapabilities } from '../run-preflight.js';

export async function withClient<T>(config: Config, fn: (client: FlotillaClient) => Promise<T>): Promise<T> {
  const client = await FlotillaClient.connect({ config });
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/**
 * `submit`: validates and enqueues. The last line of stdout is the mission id, or with
 * `--wait --json` the final status object; everything else a person reads goes to stderr.
 */
export async function submit(
  args: { file: string; wait: boolean; json: boolean; adaptersDir?: string },
  config: Config,
  io: Io,
): Promise<number> {
  const { mission, problems, warnings } = await loadMission(args.file, {
    adapterCapabilities: await adapterCapabilities(args.adaptersDir ?? config.adaptersDir),
  });
  for (const warning of warnings) io.err(`warning: ${formatProblem(warning)}`);
  if (!mission) {
    for (const problem of problems) io.err(formatProblem(problem));
    return 2;
  }
  return withClient(config, async (client) => {
    const submitted = await client.submitSpec(mission);
    for (const warning of submitted.warnings) io.err(`warning: ${warning}`);
    for (const note of submitted.notes) io.err(note);
    if (!args.wait) {
      io.out(submitted.id);
      return 0;
    }
    io.err(`mission ${submitted.id} submitted`);
    const final = await followMission(client, submitted.id, io, { json: args.json });
    io.out(args.json ? JSON.stringify(final) : submitted.id);
    return exitCodeForStatus(final.status);
  });
}

export async function status(
  args: { id?: string; json: boolean; watch: boolean },
  config: Config,
  io: Io,
): Promise<number> {
  return withClient(config, async (client) => {
    if (!args.id) {
      const ids = await client.store.listMissions(50);
      const all = await Promise.all(ids.map((id) => client.status(id).catch(() => null)));
      const rows = all.filter((s) => s !== null);
      if (args.json) {
        io.out(JSON.stringify(rows.map(({ tasks, ...rest }) => ({ ...rest, tasks: tasks.length }))));
        return 0;
      }
      if (rows.length === 0) io.out('no missions');
      for (const s of rows) {
        const done = s.tasks.filter((t) => t.status === 'completed').length;
        io.out(
          `${s.id.padEnd(40)} ${s.status.padEnd(9)} ${done}/${s.tasks.length} tasks  ${s.createdAt}  ${s.goal}`,
        );
      }
      return 0;
    }
    if (args.watch) {
      if (io.isTTY && !args.json) return exitCodeForStatus((await watchMission(client, args.id)).status);
      const final = await client.wait(args.id, {
        onEvent: (event) => io.out(args.json ? JSON.stringify(event) : formatEventLine(event)),
      });
      return exitCodeForStatus(final.status);
    }
    const s = await client.status(args.id);
    if (args.json) io.out(JSON.stringify(s));
    else for (const line of renderTable(s)) io.out(line);
    if (!args.json) {
      for (const t of s.tasks) {
        if (t.route && (t.status === 'queued' || t.status === 'pending')) io.out(`  ${t.id}: ${t.route}`);
        if (t.escalation) io.out(`  ${t.id}: ${t.tier ? `${t.tier} tier; ` : ''}${t.escalation}`);
        if (t.status === 'awaiting_approval')
          io.out(
            `  ${t.id} passed its gates and waits for a person: flotilla approve ${s.id} ${t.id} [--reject "why"]`,
          );
        if (t.questions)
          io.out(
            `  ${t.id} asks: ${JSON.stringify(t.questions)} — answer with: flotilla answer ${s.id} ${t.id} "…"`,
          );
      }
      if (s.delivery) io.out(describeDelivery(s.id, s.delivery));
    }
    return 0;
  });
}

/** The status table's delivery line: where it stands, the pull request, or why not and what next. */
export function describeDelivery(id: string, d: DeliveryStatus): string {
  const pr = d.pullRequest ? `; pull request ${d.pullRequest.url} (${d.pullRequest.action})` : '';
  switch (d.state) {
    case 'delivered':
      return `delivery: ${d.branch} pushed to ${d.remote ?? 'the remote'}${pr}`;
    case 'failed':
      return `delivery failed after ${d.tries} ${d.tries === 1 ? 'try' : 'tries'}: ${d.error ?? ''} — try again with: flotilla deliver ${id}`;
    case 'retrying':
      return `delivery: try ${d.tries} failed (${d.error ?? ''}); tries again${d.nextTryAt ? ` at ${d.nextTryAt}` : ''}`;
    case 'skipped':
      return `delivery: skipped (${d.error ?? ''})`;
    default:
      return `delivery: ${d.state}`;
  }
}

/** `report`: the audit trail in one folder — every attempt's prompt, result, criteria output and verdict. */
export async function report(args: { id: string; out?: string }, config: Config, io: Io): Promise<number> {
  return withClient(config, async (client) => {
    const s = await client.status(args.id);
    const audit = await client.store.getAudit(args.id);
    const summary = await client.summary(args.id);
    const { repo } = (await client.store.getMission(args.id)).meta;
    const dir = resolve(args.out ?? join('flotilla-reports', args.id));
    await mkdir(dir, { recursive: true });
    const lines = [
      `# Mission ${s.id}`,
      '',
      `Goal: ${s.goal}`,
      `Status: ${s.status}`,
      `Branch: ${s.branch}`,
      // Attempts are refs, not branches, so `git branch` does not show where to find them.
      `Attempts: ${ATTEMPT_REF_PREFIX}${s.id}/<task>/a<n> in ${repo}`,
      '',
    ];
    if (summary) lines.push('```', summary, '```', '');
    lines.push('## Audit trail', '');
    for (const entry of audit) {
      const who = entry.taskId ? `${entry.taskId} a${entry.attempt}` : 'mission';
      const where = [entry.host, entry.cli].filter(Boolean).join(' / ');
      const links: string[] = [];
      for (const [name, content] of Object.entries(entry.files ?? {})) {
        const folder = join(dir, entry.taskId || '_mission', `a${entry.attempt}`);
        await mkdir(folder, { recursive: true });
        await writeFile(join(folder, name), content);
        links.push(`[${name}](${entry.taskId || '_mission'}/a${entry.attempt}/${name})`);
      }
      lines.push(
        `- ${entry.at} **${who}** ${entry.stage}${where ? ` (${where})` : ''}: ${entry.message}${links.length ? ` — ${links.join(', ')}` : ''}`,
      );
    }
    await writeFile(join(dir, 'REPORT.md'), `${lines.join('\n')}\n`);
    await writeFile(join(dir, 'status.json'), `${JSON.stringify(s, null, 2)}\n`);
    // The receipt beside the texts it hashes: `sha256sum a1/prompt.md` ties one to the other.
    const receipt = await client.store.getReceipt(args.id);
    if (receipt) await writeFile(join(dir, 'receipt.json'), `${JSON.stringify(receipt, null, 2)}\n`);
    io.out(join(dir, 'REPORT.md'));
    return 0;
  });
}

export async function cancel(args: { id: string }, config: Config, io: Io): Promise<number> {
  return withClient(config, async (client) => {
    const current = await client.status(args.id);
    if (current.status !== 'running') {
      // Nothing was stopped, so this is not the success a script would read from exit 0.
      io.err(`flotilla: mission ${args.id} is already ${current.status}; nothing to cancel`);
      return 1;
    }
    const result = await client.cancel(args.id);
    io.out(
      `cancelled ${args.id}: ${result.cancelled.length} task(s) stopped before starting, ${result.running.length} running task(s) being stopped`,
    );
    return 0;
  });
}

export async function answer(
  args: { id: string; task: string; text: string },
  config: Config,
  io: Io,
): Promise<number> {
  return withClient(config, async (client) => {
    const { attempt } = await client.answer(args.id, args.task, args.text);
    io.out(`${args.task} resumes as attempt ${attempt}`);
    return 0;
  });
}

export async function approve(
  args: { id: string; task: string; reject?: string; by?: string },
  config: Config,
  io: Io,
): Promise<number> {
  return withClient(config, async (client) => {
    const verdict = {
      ...(args.reject !== undefined ? { reject: args.reject } : {}),
      ...(args.by ? { by: args.by } : {}),
    };
    const result = await client.approve(args.id, args.task, verdict);
    const { attempt, sent } = result;
    if (!result.counted) {
      io.err(`flotilla: ${alreadyDecided(args.task, result)}`);
      return 1;
    }
    io.out(
      sent.verdict === 'approve'
        ? `${args.task} attempt ${attempt} approved by ${sent.by}: it merges on a worker host and releases its dependents`
        : `${args.task} attempt ${attempt} rejected by ${sent.by}: it retries with your words in its prompt while it has attempts`,
    );
    return 0;
  });
}

export async function hosts(args: { json: boolean }, config: Config, io: Io): Promise<number> {
  return withClient(config, async (client) => {
    const list = await listHosts(client.redis, config.prefix);
    if (args.json) {
      io.out(JSON.stringify(list));
      return 0;
    }
    if (list.length === 0) io.out('no live hosts');
    for (const h of list) {
      io.out(`${h.hostId}  slots ${h.slots}  running ${h.running}  heartbeat ${h.heartbeatAt}`);
      if (h.facts) io.out(`  ${describeFacts(h.facts)}`);
      for (const c of h.clis) io.out(`  ${c.displayName} ${c.version ?? ''}: ${c.capabilities.join(', ')}`);
      for (const d of h.disabled) io.out(`  ${d.cli}: disabled — ${d.reason}`);
      for (const c of h.coolingDown) io.out(`  ${c.cli}: cooling down until ${c.until}`);
    }
    return 0;
  });
}

/** `linux/x64  tools git 2.39.5, node 20.20.2, docker absent  labels region=eu`. */
export function describeFacts(facts: HostFacts): string {
  const tools = Object.entries(facts.tools).map(
    ([name, version]) => `${name} ${version === null ? 'absent' : version || '(version unknown)'}`,
  );
  const labels = Object.entries(facts.labels).map(([key, value]) => `${key}=${value}`);
  return [
    `${facts.os}/${facts.arch}`,
    tools.length ? `tools ${tools.join(', ')}` : '',
    labels.length ? `labels ${labels.join(', ')}` : '',
  ]
    .filter(Boolean)
    .join('  ');
}
