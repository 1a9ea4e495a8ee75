/**
 * A delivery try that failed, and whether another try can help: a forge or remote that is down may
 * answer later; a bad token, a protected branch or a missing remote will not, so such a failure is
 * reported at once instead of after every automatic try.
 */
export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'DeliveryError';
  }
}
