/** The git workspace layer's public surface, for the worker pipeline and the producer. */
export {
  type AttemptCheckout,
  type CheckoutAttemptOptions,
  type CheckoutForVerifyOptions,
  checkoutAttempt,
  checkoutForVerify,
  DEFAULT_DIFF_CAP,
  type DiffAgainstIntegrationOptions,
  diffAgainstIntegration,
  type VerifyCheckout,
} from './attempt-checkout.js';
export {
  type CommitAttemptOptions,
  type CommitAttemptResult,
  commitAttempt,
  type PushRefOptions,
  pushRef,
} from './commit.js';
export { type IntegrateAttemptOptions, type IntegrateResult, integrateAttempt } from './integrate.js';
export { defaultCacheDir, type OpenRepoCacheOptions, openRepoCache, type RepoCache } from './repo-cache.js';
export { type ChangedFile, snapshotChanges } from './snapshot-changes.js';
export { removeWorktree } from './worktree.js';
export {
  describeViolations,
  type EnforceWriteScopeOptions,
  enforceWriteScope,
  scopeViolations,
} from './write-scope.js';
