/**
 * Guards around untrusted environment code: per-call timeouts, captured throws, and validation of
 * what `step` returns. Every outcome is a value, never a throw, so one bad episode cannot stop a
 * batch.
 *
 * Departure from a plain Promise.race: the timer is always cleared (no handle keeps a process
 * alive), and a call that hangs is abandoned — its promise may settle later and is ignored, with
 * any late rejection swallowed.
 */
import type { DropReason, JsonValue, StepResult, Tool, TurnStepResult } from './types.ts';

export type Guarded<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: DropReason; readonly message: string };

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

/** Runs `fn` with a time limit; a throw becomes 'env_error', running over becomes 'timeout'. */
export async function guarded<T>(what: string, timeoutMs: number, fn: () => Promise<T> | T): Promise<Guarded<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let work: Promise<T>;
  try {
    work = Promise.resolve(fn());
  } catch (error) {
    return { ok: false, reason: 'env_error', message: `${what} threw ${describe(error)}` };
  }
  work.catch(() => {}); // a late rejection after a timeout must not surface as unhandled
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const winner = await Promise.race([work.then((value) => ({ value })), timeout]);
    if (winner === 'timeout') return { ok: false, reason: 'timeout', message: `${what} did not finish within ${timeoutMs} ms` };
    return { ok: true, value: winner.value };
  } catch (error) {
    return { ok: false, reason: 'env_error', message: `${what} threw ${describe(error)}` };
  } finally {
    clearTimeout(timer);
  }
}

/** `info` as JSON-only plain data (anything unserializable is replaced by a note). */
export function sanitizeInfo(info: unknown): { readonly [k: string]: JsonValue } {
  if (info === undefined || info === null) return {};
  try {
    const copy: unknown = JSON.parse(JSON.stringify(info));
    if (copy !== null && typeof copy === 'object' && !Array.isArray(copy)) return copy as { [k: string]: JsonValue };
    return { value: copy as JsonValue };
  } catch (error) {
    return { infoError: `unserializable info: ${describe(error)}` };
  }
}

/**
 * Runs a result check, its throws captured: reading an environment's result runs the
 * environment's code too (a getter, a Proxy trap), so a throw there drops the episode as
 * 'env_error' like a throw from `step` itself, instead of escaping the rollout.
 */
function readSafely<T>(what: string, check: () => Guarded<T>): Guarded<T> {
  try {
    return check();
  } catch (error) {
    return { ok: false, reason: 'env_error', message: `reading the ${what} threw ${describe(error)}` };
  }
}

/** Checks a single-agent step result; a missing or non-finite reward is 'invalid_reward'. */
export function checkStepResult(result: unknown): Guarded<StepResult> {
  return readSafely('step result', () => checkStepResultUnsafe(result));
}

function checkStepResultUnsafe(result: unknown): Guarded<StepResult> {
  if (result === null || typeof result !== 'object') {
    return { ok: false, reason: 'env_error', message: `step returned ${String(result)}, not a StepResult object` };
  }
  const r = result as Record<string, unknown>;
  if (typeof r.observation !== 'string') return { ok: false, reason: 'env_error', message: 'step result has no string observation' };
  if (typeof r.done !== 'boolean') return { ok: false, reason: 'env_error', message: 'step result has no boolean done' };
  if (typeof r.reward !== 'number' || !Number.isFinite(r.reward)) {
    return { ok: false, reason: 'invalid_reward', message: `step returned reward ${String(r.reward)}, not a finite number` };
  }
  return { ok: true, value: { observation: r.observation, reward: r.reward, done: r.done, info: sanitizeInfo(r.info) } };
}

/** Checks a turn-based step result for `numPlayers` players. */
export function checkTurnStepResult(result: unknown, numPlayers: number): Guarded<TurnStepResult> {
  return readSafely('step result', () => checkTurnStepResultUnsafe(result, numPlayers));
}

function checkTurnStepResultUnsafe(result: unknown, numPlayers: number): Guarded<TurnStepResult> {
  if (result === null || typeof result !== 'object') {
    return { ok: false, reason: 'env_error', message: `step returned ${String(result)}, not a TurnStepResult object` };
  }
  const r = result as Record<string, unknown>;
  if (typeof r.observation !== 'string') return { ok: false, reason: 'env_error', message: 'step result has no string observation' };
  if (typeof r.done !== 'boolean') return { ok: false, reason: 'env_error', message: 'step result has no boolean done' };
  if (!Array.isArray(r.rewardsP) || r.rewardsP.length !== numPlayers) {
    return { ok: false, reason: 'invalid_reward', message: `step returned rewardsP ${JSON.stringify(r.rewardsP)}, not ${numPlayers} numbers` };
  }
  if (!r.rewardsP.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    return { ok: false, reason: 'invalid_reward', message: `step returned non-finite rewards ${String(r.rewardsP)}` };
  }
  const player = r.player;
  if (!r.done && (typeof player !== 'number' || !Number.isInteger(player) || player < 0 || player >= numPlayers)) {
    return { ok: false, reason: 'env_error', message: `step returned next player ${String(player)}, not in [0, ${numPlayers})` };
  }
  return {
    ok: true,
    value: { player: (player as number) ?? 0, observation: r.observation, rewardsP: [...(r.rewardsP as number[])], done: r.done, info: sanitizeInfo(r.info) },
  };
}

/**
 * Runs an agent's tool call: the tool's output, or `error: …` for a tool that throws or a name
 * the environment does not offer (the agent's problem, answered to it); not ok only when the tool
 * hangs past `timeoutMs` (the episode's problem). One place for single-agent episodes and games.
 */
export async function callTool(tools: ReadonlyMap<string, Tool>, name: string, args: string, timeoutMs: number): Promise<Guarded<{ readonly output: string; readonly known: boolean }>> {
  const tool = tools.get(name);
  if (tool === undefined) return { ok: true, value: { output: `error: unknown tool "${name}"; tools: ${[...tools.keys()].join(', ')}`, known: false } };
  const called = await guarded(`tool ${name}`, timeoutMs, () =>
    Promise.resolve()
      .then(() => tool.call(args))
      .then(String, (err: unknown) => `error: ${err instanceof Error ? err.message : String(err)}`),
  );
  return called.ok ? { ok: true, value: { output: called.value, known: true } } : called;
}
