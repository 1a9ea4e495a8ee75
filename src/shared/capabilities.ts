/** The capability vocabulary of cli-dispatch; adapters may add terms of their own. */
export const CAPABILITIES = [
  'code_implementation',
  'code_review',
  'testing',
  'refactoring',
  'bug_fixing',
  'ui_design',
  'ux_research',
  'web_search',
  'large_analysis',
  'security_audit',
  'performance_analysis',
  'documentation',
] as const;

export type KnownCapability = (typeof CAPABILITIES)[number];

/** Division → capability affinity, in the order the seed lists them. */
export const DIVISION_AFFINITY: Readonly<Record<string, readonly string[]>> = {
  Engineering: ['code_implementation', 'refactoring', 'bug_fixing'],
  Design: ['ui_design', 'ux_research'],
  Testing: ['testing', 'code_review', 'performance_analysis'],
  Marketing: ['documentation', 'web_search'],
  Product: ['documentation', 'ux_research'],
  'Project Management': ['documentation', 'large_analysis'],
  Support: ['large_analysis', 'security_audit', 'documentation'],
  'Spatial Computing': ['code_implementation', 'ui_design'],
  Specialized: ['large_analysis', 'code_review'],
};

/** Capabilities that change files; in surgical mode they go to the internal agent. */
export const IMPLEMENTATION_CAPABILITIES: readonly string[] = [
  'code_implementation',
  'refactoring',
  'bug_fixing',
];

export const CONTROL_MODES = ['autonomous', 'guarded', 'surgical', 'advisory'] as const;
export type ControlMode = (typeof CONTROL_MODES)[number];

export const TASK_KINDS = ['coding', 'research', 'review', 'planning'] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

export const MODEL_TIERS = ['planning', 'execution', 'check'] as const;
export type ModelTier = (typeof MODEL_TIERS)[number];
