/**
 * Redis keys of flotilla's own state. Every key starts with the prefix, which holds a hash tag, so
 * Lua scripts may touch several of them even on Redis Cluster.
 */
export function missionKeys(prefix: string, missionId: string) {
  const base = `${prefix}:m:${missionId}`;
  return {
    meta: base,
    tasks: `${base}:tasks`,
    graph: `${base}:graph`,
    events: `${base}:events`,
    audit: `${base}:audit`,
    /** taskId → the positions of its entries in `audit`, comma-separated: one task's trail without reading all. */
    auditIndex: `${base}:audit-index`,
  } as const;
}

export function missionIndexKey(prefix: string): string {
  return `${prefix}:missions`;
}

export function hostsKey(prefix: string): string {
  return `${prefix}:hosts`;
}

export function hostKey(prefix: string, hostId: string): string {
  return `${prefix}:host:${hostId}`;
}

/** The requirement sets tasks have named, by key (shared/host-facts.ts): hosts serve those they satisfy. */
export function requirementSetsKey(prefix: string): string {
  return `${prefix}:requirement-sets`;
}

export function controlChannel(prefix: string): string {
  return `${prefix}:control`;
}

/** How often a critic job was handed back to find a reviewer on another host. */
export function handbackKey(prefix: string, jobId: string): string {
  return `${prefix}:handbacks:${jobId}`;
}

/** A lock that one host at a time holds (the sweep). */
export function lockKey(prefix: string, name: string): string {
  return `${prefix}:${name}-lock`;
}

/** The id a cluster's Redis holds for it: what tells two clusters' hosts of one id apart on a machine. */
export function clusterIdKey(prefix: string): string {
  return `${prefix}:cluster-id`;
}
