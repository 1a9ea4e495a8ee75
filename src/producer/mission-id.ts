import { randomBytes } from 'node:crypto';

/**
 * A readable, unique mission id: a slug of the goal and a random suffix. It never contains `:`
 * (BullMQ job ids) and is never all digits.
 */
export function newMissionId(goal: string): string {
  const slug = goal
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .split('-')
    .slice(0, 4)
    .join('-')
    .slice(0, 32)
    .replace(/-+$/g, '');
  const suffix = randomBytes(4).toString('hex').slice(0, 6);
  return `${slug || 'mission'}-${suffix}`;
}
