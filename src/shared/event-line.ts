import type { MissionEvent } from './contracts.js';

/**
 * One plain line per event, for CI logs, pipes and scripts (`flotilla run`'s log and the library's
 * `formatEventLine`): time, who (a task and its attempt, or `mission` for the mission's own
 * events, which have no task), status (or the event's type when it has none), the message's first
 * line.
 */
export function formatEventLine(event: MissionEvent): string {
  const time = event.at.slice(11, 19);
  const who = event.taskId ? `${event.taskId}${event.attempt ? ` a${event.attempt}` : ''}` : 'mission';
  const first = event.message.split('\n')[0] ?? '';
  return `${time} ${who.padEnd(18)} ${(event.status ?? event.type).padEnd(10)} ${first}`;
}
