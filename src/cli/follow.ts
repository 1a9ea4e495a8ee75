import type { FlotillaClient } from '../mission/client.js';
import type { MissionStatusJson } from '../shared/contracts.js';
import type { Io } from './io.js';
import { formatEventLine, LiveTable, renderTable } from './progress.js';

/**
 * Follows a mission until it finishes: a live table on a terminal, one line per event otherwise.
 * Prints the completion summary at the end; returns the final status.
 */
export async function followMission(
  client: FlotillaClient,
  id: string,
  io: Io,
  options: { json: boolean; signal?: AbortSignal },
): Promise<MissionStatusJson> {
  const live = io.isTTY && !options.json;
  const table = new LiveTable((text) => process.stdout.write(text));
  let timer: NodeJS.Timeout | undefined;
  if (live) {
    const redraw = async () => table.draw(renderTable(await client.status(id)));
    await redraw();
    timer = setInterval(() => void redraw().catch(() => undefined), 500);
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
    if (live) table.draw(renderTable(final));
    const summary = await client.summary(id);
    if (summary) (options.json ? io.err : io.out)(`\n${summary}`);
    return final;
  } finally {
    if (timer) clearInterval(timer);
  }
}

export function exitCodeForStatus(status: MissionStatusJson['status']): number {
  return status === 'done' ? 0 : 1;
}
