/** Shared by the unit tests: the ConfigError a call throws (fails the test when it throws nothing, or something else). */
import { expect } from 'vitest';
import { ConfigError } from '../../src/errors.ts';

export function configError(f: () => unknown): ConfigError {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}
