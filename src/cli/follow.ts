import { buildOverview } from '../board/mission-overview.js';
import type { FlotillaClient } from '../client.js';
import type { MissionStatusJson } from '../shared/contracts.js';
import { formatEventLine } from '../shared/event-line.js';
import type { TaskSpec } from '../shared/mission.js';
import type { Io } from './io.js';
import { LiveTable } from './progress.js';
import { layoutScreen, type ScreenSize } from './screen-layout.js';

/** How often the live view is redrawn; the elapsed times move even when no event arrives. */
const REDRAW_MS = 1_000;
/** What a terminal that does not say its size is taken to be. */
const DEFAULT_SIZE: ScreenSize = { rows: 24, cols: 80 };

function terminalSize(): ScreenSize {
  return {
    rows: process.stdout.rows || DEFAULT_SIZE.rows,
    cols: process.stdout.columns || DEFAULT_SIZE.cols,
  };
}

/**
 * The live view on a terminal: the mission's overview (with the attention list, which needs the
 * spec and the live hosts) laid out to the terminal's size and drawn in place.
 */
function createLiveScreen(client: FlotillaClient, id: string) {
  const table = new LiveTable((text) => process.stdout.write(text));
  let tasks: readonly TaskSpec[] | undefined;
  return async (known?: MissionStatusJson): Promise<MissionStatusJson> => {
    tasks ??= (await client.store.getMission(id)).spec.tasks;
    const [status, hosts] = await Promise.all([known ?? client.status(id), client.store.hosts()]);
    const now = Date.now();
    const overview = buildOverview({
      tasks,
      states: Object.fromEntries(status.tasks.map((t) => [t.id, t])),
      createdAt: status.createdAt,
      finishedAt: status.finishedAt,
      costUsd: status.costUsd ?? 0,
      hosts: status.status === 'running' ? hosts : null,
      now,
    });
    table.draw(layoutScreen({ status, overview, now }, terminalSize()));
    return status;
  };
}

/**
 * Follows a mission until it finishes: the live view on a terminal, one line per event otherwise.
 * Prints the completion summary at the end; returns the final status.
 */
export async function followMission(
  client: FlotillaClient,
  id: string,
  io: Io,
  options: { json: boolean; signal?: AbortSignal },
): Promise<MissionStatusJson> {
  const live = io.isTTY && !options.json;
  const redraw = live ? createLiveScreen(client, id) : undefined;
  let timer: NodeJS.Timeout | undefined;
  if (redraw) {
    await redraw();
    timer = setInterval(() => void redraw().catch(() => undefined), REDRAW_MS);
  }
  try {
    const final = await client.wait(id, {
      signal: options.signal,
      onEvent: (event) => {
        if (live || event.type === 'mission') return;
        (options.json ? io.err : io.out)(formatEventLine(event));
      },
    });
    if (timer) clearInterval(timer);
    if (redraw) await redraw(final);
    const summary = await client.summary(id);
    if (summary) (options.json ? io.err : io.out)(`\n${summary}`);
    return final;
  } finally {
    if (timer) clearInterval(timer);
  }
}

/** `status <id> --watch` on a terminal: the live view, redrawn until the mission finishes. */
export async function watchMission(client: FlotillaClient, id: string): Promise<MissionStatusJson> {
  const redraw = createLiveScreen(client, id);
  for (;;) {
    const status = await redraw();
    if (status.status !== 'running') return status;
    await new Promise((resolve) => setTimeout(resolve, REDRAW_MS));
  }
}

export function exitCodeForStatus(status: MissionStatusJson['status']): number {
  return status === 'done' ? 0 : 1;
}
