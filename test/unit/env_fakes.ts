// Test doubles for the env layer: a scripted policy behind the SampleFn contract, and small
// environments that misbehave on purpose.
import { ByteTokenizer } from '../../src/model/tokenizer/byte.ts';
import type { Environment, SampleFn, SampleRequest, StepResult, TurnBasedEnvironment, TurnBasedEnvSpec } from '../../src/env/types.ts';

export const tok = new ByteTokenizer();

/** A policy that decides its action text from the decoded prompt; every token gets log-prob `lp`. */
export function fakePolicy(decide: (prompt: string, request: SampleRequest) => string, lp = -0.5): SampleFn & { calls: SampleRequest[][] } {
  const calls: SampleRequest[][] = [];
  const fn = async (requests: readonly SampleRequest[]) => {
    calls.push([...requests]);
    return requests.map((r) => {
      const tokens = tok.encode(decide(tok.decode(r.promptTokens), r)).slice(0, r.maxTokens);
      return { tokens, logprobs: tokens.map(() => lp) };
    });
  };
  return Object.assign(fn, { calls });
}

/** A scripted environment: step k returns steps[k] (or throws / hangs as told). */
export type ScriptStep = StepResult | 'throw' | 'hang' | { raw: unknown };
export function scriptedEnv(steps: readonly ScriptStep[], opts: { resetThrows?: boolean; resetHangs?: boolean; name?: string } = {}): Environment & { actions: string[]; closed: number } {
  let k = 0;
  const env = {
    name: opts.name ?? 'scripted',
    actions: [] as string[],
    closed: 0,
    async reset(seed: number) {
      if (opts.resetThrows) throw new Error('reset exploded');
      if (opts.resetHangs) return new Promise<string>(() => {});
      k = 0;
      return `task ${seed}`;
    },
    async step(action: string): Promise<StepResult> {
      env.actions.push(action);
      const s = steps[Math.min(k++, steps.length - 1)];
      if (s === 'throw') throw new Error('step exploded');
      if (s === 'hang') return new Promise<StepResult>(() => {});
      if (typeof s === 'object' && 'raw' in s) return s.raw as StepResult;
      return s;
    },
    close() {
      env.closed++;
    },
  };
  return env;
}

/** A two-player game that counts moves: player p's action must be "p"; ends after `length` moves. */
export function countingGame(length: number, opts: { throwAt?: number; winner?: number } = {}): TurnBasedEnvSpec & { log: string[] } {
  const log: string[] = [];
  return {
    name: 'counting',
    numPlayers: 2,
    log,
    create(): TurnBasedEnvironment {
      let moves = 0;
      let player = 0;
      return {
        name: 'counting',
        numPlayers: 2,
        async reset() {
          moves = 0;
          player = 0;
          return { player: 0, observation: 'start p0' };
        },
        async step(action: string) {
          log.push(`${player}:${action}`);
          if (opts.throwAt === moves) throw new Error('game exploded');
          moves++;
          const actor = player;
          player = 1 - player;
          if (moves >= length) {
            const w = opts.winner ?? actor;
            return { player, observation: 'over', rewardsP: [w === 0 ? 1 : -1, w === 1 ? 1 : -1], done: true };
          }
          return { player, observation: `move ${moves} for p${player}`, rewardsP: [0.25 * (actor === 0 ? 1 : 0), 0], done: false };
        },
      };
    },
  };
}
