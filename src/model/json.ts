/**
 * JSON from files we do not control (safetensors headers, config.json, adapter_config.json).
 *
 * JSON.parse itself defines `__proto__` as a plain own property, but code that later copies such
 * an object with `obj[key] = …` or spreads it into a config can be steered; so any key named
 * `__proto__`, `constructor` or `prototype`, at any depth, is refused during the parse (the reviver
 * sees every key) and the caller turns that into its own typed error.
 */

export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Why parseUntrustedJson failed. */
export class UntrustedJsonError extends Error {
  readonly forbiddenKey: string | undefined;
  constructor(message: string, forbiddenKey?: string) {
    super(message);
    this.forbiddenKey = forbiddenKey;
  }
}

/** JSON.parse that rejects forbidden keys; throws UntrustedJsonError (never anything else). */
export function parseUntrustedJson(text: string): unknown {
  try {
    return JSON.parse(text, (key, value: unknown) => {
      if (FORBIDDEN_KEYS.has(key)) throw new UntrustedJsonError(`forbidden key "${key}"`, key);
      return value;
    });
  } catch (e) {
    if (e instanceof UntrustedJsonError) throw e;
    throw new UntrustedJsonError(`invalid JSON: ${(e as Error)?.message ?? String(e)}`);
  }
}

/** A plain, non-array object (what every JSON file we read must be at its top). */
export function isJsonObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
