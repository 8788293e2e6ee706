/**
 * What the game probes (scripts/signal_probe.ts, scripts/bargain_probe.ts) share: their numeric
 * flags, and a game wrapper that hands each finished game's last step info to the probe — the games
 * the warm start replays from its demonstrations skipped — so the probe can tabulate the held-out games.
 */
import type { Demonstration, Trajectory, TurnBasedEnvSpec } from '../src/env/types.ts';
import type { Rng } from '../src/mod.ts';

/** Reads a flag of parseArgs' `values` as a finite number (RangeError naming the flag). */
export const numberFlag = <V extends Record<string, unknown>>(values: V) => (k: keyof V & string): number => {
  const x = Number(values[k]);
  if (!Number.isFinite(x)) throw new RangeError(`--${k} must be a number, got ${String(values[k])}`);
  return x;
};

/**
 * `base` with its demonstrations passed through `teach` (identity by default), and `onGame` called
 * with the info of every finished game's last step, except the demonstration replays (which come
 * first: the warm start replays every demonstration it drew before any game is played) and a best
 * response's counterfactual games (replayed after the step's games, before the next step's).
 */
export function watchGames(
  base: TurnBasedEnvSpec,
  onGame: (info: Readonly<Record<string, unknown>>) => void,
  teach: (d: Demonstration) => Demonstration = (d) => d,
): TurnBasedEnvSpec {
  let replays = 0;
  return {
    ...base,
    demonstrations: (n: number, rng: Rng) => (replays += n, base.demonstrations!(n, rng).map(teach)),
    // A best response's counterfactual games (one per action the seat had) are replays too: not counted.
    ...(base.counterfactuals ? { counterfactuals: (t: Trajectory) => {
      const cf = base.counterfactuals!(t);
      replays += cf?.length ?? 0;
      return cf;
    } } : {}),
    create() {
      const e = base.create();
      return {
        name: e.name, numPlayers: e.numPlayers, reset: (seed: number, variant?: string) => e.reset(seed, variant),
        async step(action: string) {
          const r = await e.step(action);
          if (r.done) {
            if (replays > 0) replays--;
            else onGame((r.info ?? {}) as Record<string, unknown>);
          }
          return r;
        },
      };
    },
  };
}
