/**
 * Deep freezing and plain-data checks for values that cross Workers by structured clone
 * (trajectories, datums, packed batches).
 *
 * Departure from a textbook deep-freeze: typed arrays cannot be frozen (the engine refuses to
 * freeze an ArrayBufferView with elements), so they are left as they are and their owning object
 * is frozen; consumers treat them as read-only. Anything that is not an array, a typed array or a
 * plain object (a class instance, a function, a Map) is rejected, because it would not survive
 * structured clone the same way.
 */

/** Freezes `value` and everything reachable from it (typed arrays excepted); returns it. */
export function deepFreeze<T>(value: T): T {
  freezeInto(value, new Set());
  return value;
}

function freezeInto(value: unknown, seen: Set<unknown>): void {
  if (value === null || typeof value !== 'object' || seen.has(value)) return;
  seen.add(value);
  if (ArrayBuffer.isView(value)) return; // cannot be frozen; see header
  for (const key of Object.keys(value)) freezeInto((value as Record<string, unknown>)[key], seen);
  Object.freeze(value);
}

/** Whether `value` holds only primitives, arrays, typed arrays and plain objects (no cycles). */
export function isPlainData(value: unknown, stack: unknown[] = []): boolean {
  if (value === null) return true;
  const t = typeof value;
  if (t === 'string' || t === 'number' || t === 'boolean' || t === 'undefined') return true;
  if (t !== 'object') return false; // functions, symbols, bigints
  if (stack.includes(value)) return false;
  if (ArrayBuffer.isView(value)) return true;
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return false;
  stack.push(value);
  const ok = Object.keys(value as object).every((k) => isPlainData((value as Record<string, unknown>)[k], stack));
  stack.pop();
  return ok;
}
