/** One palette for badges, graph nodes and the legend, so a colour means the same everywhere. */
export interface StatusStyle {
  readonly stroke: string;
  readonly fill: string;
  readonly text: string;
}

const GREEN = { stroke: '#2e7d32', fill: '#e8f5e9', text: '#1b5e20' };
const RED = { stroke: '#c62828', fill: '#ffebee', text: '#b71c1c' };
const BLUE = { stroke: '#1565c0', fill: '#e3f2fd', text: '#0d47a1' };
const PURPLE = { stroke: '#6a1b9a', fill: '#f3e5f5', text: '#4a148c' };
const ORANGE = { stroke: '#e65100', fill: '#fff3e0', text: '#bf360c' };
const GREY = { stroke: '#9e9e9e', fill: '#f5f5f5', text: '#616161' };

const STYLES: Readonly<Record<string, StatusStyle>> = {
  // task statuses
  pending: { stroke: '#b0bec5', fill: '#ffffff', text: '#546e7a' },
  queued: { stroke: '#0288d1', fill: '#e1f5fe', text: '#01579b' },
  running: BLUE,
  verifying: PURPLE,
  reviewing: PURPLE,
  retrying: ORANGE,
  needs_input: { stroke: '#f9a825', fill: '#fffde7', text: '#8d6e00' },
  awaiting_approval: { stroke: '#00897b', fill: '#e0f2f1', text: '#00695c' },
  completed: GREEN,
  failed: RED,
  skipped: GREY,
  cancelled: { stroke: '#424242', fill: '#eeeeee', text: '#212121' },
  // mission statuses
  done: GREEN,
  partial: ORANGE,
};

export function statusStyle(status: string): StatusStyle {
  return STYLES[status] ?? GREY;
}
