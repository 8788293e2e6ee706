/**
 * How the command-line tools end on an error: a WebtinkerError (bad flags, a bad config, a refused
 * job, a Hub error…) is one line on stderr and exit code 2; anything else is a bug and is thrown.
 */
import { WebtinkerError } from '../errors.ts';

export function exitCodeOf(e: unknown): number {
  if (e instanceof WebtinkerError) {
    console.error(`error: ${e.message}`);
    return 2;
  }
  throw e;
}
