/**
 * Typed errors of the environment & agent layer, extending the shared WebtinkerError.
 *
 * Environments that misbehave during a rollout do not raise these: their episodes are dropped
 * and counted (see rollout.ts). These errors are for callers who break a contract the rollout
 * cannot work around — a sampling function that returns mismatched arrays, a bad configuration —
 * and for the calculator's arithmetic parser, whose failures are a normal, typed outcome.
 */
import { WebtinkerError } from '../errors.ts';

/** Why an arithmetic expression could not be evaluated. */
export type ArithmeticErrorKind = 'syntax' | 'division_by_zero' | 'non_finite' | 'too_long' | 'too_deep';

/** The calculator's parser rejected its input; `position` is the character offset of the fault. */
export class ArithmeticError extends WebtinkerError {
  readonly kind: ArithmeticErrorKind;
  readonly position: number;
  constructor(kind: ArithmeticErrorKind, message: string, position: number) {
    super(`arithmetic-${kind.replaceAll('_', '-')}`, `${message} (at character ${position})`);
    this.kind = kind;
    this.position = position;
  }
}

/** A sampling function broke its contract (wrong count of results, token/logprob lengths differ). */
export class SampleContractError extends WebtinkerError {
  constructor(message: string) {
    super('sample-contract', `SampleFn: ${message}`);
  }
}

/** Input to a pure algorithm or a rollout is malformed (lengths disagree, a value out of range). */
export class InvalidInputError extends WebtinkerError {
  readonly where: string;
  constructor(where: string, message: string) {
    super('invalid-input', `${where}: ${message}`);
    this.where = where;
  }
}

/**
 * A job stopped because its environment failed every episode of a phase: every rollout of an RL
 * step, every held-out evaluation episode, or every warm-start demonstration was dropped. Training
 * on nothing would only look like training (reward 0, or an optimizer step without gradients), so
 * the job stops with the environment's own first message of each kind. `byReason` holds each drop
 * reason's count and first message.
 */
export class EnvironmentError extends WebtinkerError {
  readonly env: string;
  readonly phase: string;
  readonly episodes: number;
  readonly byReason: { readonly [reason: string]: { readonly count: number; readonly message: string } };
  constructor(env: string, phase: string, episodes: number, byReason: EnvironmentError['byReason']) {
    const kinds = Object.entries(byReason).map(([r, d]) => `${r} ×${d.count}: ${d.message}`);
    super('environment', `environment "${env}" failed every episode of ${phase} (${episodes} of ${episodes} dropped) — ${kinds.join('; ')}`);
    this.env = env;
    this.phase = phase;
    this.episodes = episodes;
    this.byReason = byReason;
  }
}
