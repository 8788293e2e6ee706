/**
 * The information bonus: a positive-signalling bias (Eccles et al. 2019, "Biases for Emergent
 * Communication in Multi-agent Reinforcement Learning") as a pure function over one seat's groups.
 * Each trajectory's reward gains coef · (log π(a | s) − log p̂(a)): its actions' sampled
 * log-probability under the seat's policy (the sum over its policy tokens), less the log of their
 * share among all the step's trajectories of the seat (the same action texts, in order). Its mean
 * over a step estimates coef · I(observation; action) — the actions' mutual information with what
 * the seat saw — so an agent is paid for saying different things in different situations and for
 * being sure of what it says in each, whichever mapping that is: no code is favoured, and a speaker
 * that sends one message whatever it sees (pooling) earns nothing. Within a group (one game, so one
 * observation) it ranks the attempts by how specific their action is to that observation.
 */
import { InvalidInputError } from '../env/errors.ts';
import type { Trajectory, TrajectoryGroup } from '../env/types.ts';

/** Sum of a trajectory's sampled log-probs over its policy tokens: log π(actions | observations). */
export function actionLogprob(t: Trajectory): number {
  let s = 0;
  for (let i = 0; i < t.tokensT.length; i++) if (t.policyMaskT[i] > 0) s += t.logprobsT[i];
  return s;
}

/**
 * The bonus's parts' weights: `marginal` pays an action's rarity, −log p̂(a) (its batch mean is
 * the entropy of the actions over all observations, H(A)); `conditional` pays the seat's sureness
 * of it, log π(a | s) (its mean is −H(A | S)). A number c weighs both alike: c · the pointwise
 * mutual information. Apart they are Eccles et al.'s two terms: a speaker pooling two targets on one
 * message earns log 2 from the rarity part, and one of them moving to a letter nobody sends would earn
 * more, whatever it is sure of yet — a push out of a partial pooling that the sureness part, which pays
 * only messages already specific, does not give; but from a start without a code the rarity part also
 * holds every letter equally rare (README "Several agents": the signalling speaker stayed uniform).
 * Neither part alone looks at what the seat saw. `posterior` does: it pays p̂(s | a), the share of
 * the step's actions like this one that the seat took on this observation (the seat's prompt) — what
 * a listener who had heard the whole step would make of the message. Pooling pays 1/k on it, a lone
 * message sent for one target 1, and a code where each message names one target 1 for every game.
 * Parts left out weigh 0; at least one must be given.
 *
 * `steps` (object form only) counts the shares over the seat's actions of its last `steps` steps, this
 * one's included (default 1: the step's alone; the caller passes the earlier ones, `earlier` below):
 * what the seat has been saying for a target lately rather than one step's draw, so a slight lean of
 * one target towards one message keeps paying from step to step instead of averaging out.
 */
export type InformationBonus = number | { readonly marginal?: number; readonly conditional?: number; readonly posterior?: number; readonly steps?: number };

/** The parts of the object form. */
const PARTS = ['marginal', 'conditional', 'posterior'] as const;

/** What is wrong with an `InformationBonus` (null: nothing). */
export function bonusProblem(coef: InformationBonus): string | null {
  if (typeof coef === 'number') return Number.isFinite(coef) && coef >= 0 ? null : `coef must be a finite number ≥ 0, got ${coef}`;
  if (typeof coef !== 'object' || coef === null) return `expected a number or { marginal, conditional, posterior }, got ${String(coef)}`;
  const named = Object.keys(coef).filter((k) => k !== 'steps');
  for (const k of named) if (!(PARTS as readonly string[]).includes(k)) return `unknown part "${k}" (known: ${PARTS.join(', ')}, and steps)`;
  if (coef.steps !== undefined && (!Number.isInteger(coef.steps) || coef.steps < 1)) return `steps must be an integer ≥ 1, got ${String(coef.steps)}`;
  if (named.length === 0) return `names no part (known: ${PARTS.join(', ')})`;
  for (const k of named as (typeof PARTS)[number][]) {
    const x = coef[k];
    if (typeof x !== 'number' || !Number.isFinite(x) || x < 0) return `${k} must be a finite number ≥ 0, got ${String(x)}`;
  }
  return null;
}

/** The steps whose actions an `InformationBonus` counts its shares over (1: the step's own). */
export function bonusSteps(coef: InformationBonus): number {
  return typeof coef === 'object' && coef !== null ? coef.steps ?? 1 : 1;
}

/** The weights of an `InformationBonus`, a part left out 0 (InvalidInputError when it is not one). */
export function bonusWeights(coef: InformationBonus): { marginal: number; conditional: number; posterior: number } {
  const problem = bonusProblem(coef);
  if (problem) throw new InvalidInputError('informationBonus', problem);
  return typeof coef === 'number' ? { marginal: coef, conditional: coef, posterior: 0 }
    : { marginal: coef.marginal ?? 0, conditional: coef.conditional ?? 0, posterior: coef.posterior ?? 0 };
}

/** What a trajectory's seat saw first: its prompt's tokens (the observation the posterior part conditions on). */
export function promptKey(t: Trajectory): string {
  return t.tokensT.slice(0, t.promptLength).join(',');
}

/**
 * The groups with each trajectory's reward raised by coef · (log π(a | s) − log p̂(a)) (or, with
 * the parts weighed apart, conditional · log π(a | s) − marginal · log p̂(a) + posterior · p̂(s | a));
 * the rest unchanged. `message` (an environment's `TurnBasedEnvSpec.message`) says what a
 * trajectory's actions told the others — actions are then the same when their messages are, and one
 * whose message did not come through (null) gets no bonus: an unreadable action is not paid for being
 * specific. It still counts in the shares (a message's share is of all the step's actions, as π̄(m)
 * is of all the policy's outputs), so readable messages are not marked down for the policy's
 * unreadable ones; the posterior is over the readable ones (who heard nothing learnt nothing).
 * Without it, actions are compared by their text. `earlier` (the seat's trajectories of its previous
 * steps, for `steps` > 1) count in the shares alike but are not paid: only `groups` come back.
 */
export function informationBonus(groups: readonly TrajectoryGroup[], coef: InformationBonus, message?: (t: Trajectory) => string | null,
  earlier: readonly Trajectory[] = []): TrajectoryGroup[] {
  const w = bonusWeights(coef);
  const key = message ?? ((t: Trajectory) => JSON.stringify(t.turns.map((x) => x.action)));
  const keysG = groups.map((g) => g.trajectories.map(key));
  const keysE = earlier.map(key);
  const all = [...keysG.flat(), ...keysE];
  const tally = (m: Map<string, number>, k: string | null) => k !== null && m.set(k, (m.get(k) ?? 0) + 1);
  const counts = new Map<string, number>();
  for (const k of all) tally(counts, k);
  // n(s, a): the readable actions by what the seat saw and what it said (posterior part only).
  const jointOf = (t: Trajectory, k: string | null) => (w.posterior === 0 || k === null ? null : JSON.stringify([promptKey(t), k]));
  const jointG = groups.map((g, i) => g.trajectories.map((t, j) => jointOf(t, keysG[i][j])));
  const joint = new Map<string, number>();
  for (const k of [...jointG.flat(), ...earlier.map((t, i) => jointOf(t, keysE[i]))]) tally(joint, k);
  return groups.map((g, i) => ({
    ...g,
    trajectories: g.trajectories.map((t, j) => {
      const k = keysG[i][j];
      if (k === null) return t;
      const n = counts.get(k)!;
      const sk = jointG[i][j];
      const posterior = sk === null ? 0 : w.posterior * (joint.get(sk)! / n);
      return { ...t, reward: t.reward + w.conditional * actionLogprob(t) - w.marginal * Math.log(n / all.length) + posterior };
    }),
  }));
}
