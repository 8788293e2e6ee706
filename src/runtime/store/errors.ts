/** Typed errors of the adapter and checkpoint stores; each names the store, the key or the adapter. */
import { WebtinkerError } from '../../errors.ts';

/** A store could not read or write what was asked (the base of the store errors). */
export class StoreError extends WebtinkerError {
  constructor(message: string, options?: { cause?: unknown }, code = 'store') {
    super(code, message, options);
  }
}

/** The browser's storage quota (or the disk) is full. The previous versions are intact. */
export class StoreQuotaError extends StoreError {
  constructor(what: string, options?: { cause?: unknown }) {
    super(`${what}: storage quota exceeded — free space (delete old adapter versions) or ask for persistent storage; previous versions are intact`, options, 'store-quota');
  }
}

/** The adapter, checkpoint or version asked for is not in the store. */
export class StoreNotFoundError extends StoreError {
  constructor(what: string) {
    super(`${what} not found`, undefined, 'store-not-found');
  }
}

/** Stored bytes do not match what was written (checksum, size or shape). */
export class StoreCorruptError extends StoreError {
  constructor(what: string) {
    super(`${what} is corrupt`, undefined, 'store-corrupt');
  }
}

/** Map a backend error to a typed one; quota errors are recognized by name (DOMException) or errno. */
export function storeError(what: string, cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause;
  const name = (cause as { name?: string } | null)?.name;
  const code = (cause as { code?: string } | null)?.code;
  if (name === 'QuotaExceededError' || code === 'ENOSPC' || code === 'EDQUOT') return new StoreQuotaError(what, { cause });
  return new StoreError(`${what}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
}
