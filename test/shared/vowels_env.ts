/**
 * A test environment with graded rewards, so that a from-scratch tiny model's RL steps train
 * (calculator's rewards are all 0 for such a model, and GRPO then skips every group): one action
 * per episode, rewarded for ASCII and vowels. Short prompts (fits tiny-gpt2's context) and
 * demonstrations for a warm start. The reward is graded even for random bytes: half for each
 * ASCII character, the other half for each vowel, over the action's length.
 */
import type { Demonstration, Environment, EnvSpec } from '../../src/env/types.ts';
import type { JobEnv } from '../../src/runtime/job_envs.ts';
import type { Rng } from '../../src/util/rng.ts';

export function vowelsSpec(): EnvSpec {
  return {
    name: 'vowels',
    create(): Environment {
      return {
        name: 'vowels',
        reset: (seed) => Promise.resolve(`vowels ${seed % 10}:`),
        step(action) {
          const chars = [...action];
          const ascii = chars.filter((ch) => ch.charCodeAt(0) < 128).length;
          const vowels = chars.filter((ch) => 'aeiou'.includes(ch)).length;
          return Promise.resolve({ observation: '', reward: (ascii + vowels) / (2 * Math.max(1, chars.length)), done: true });
        },
      };
    },
    demonstrations(n: number, rng: Rng): Demonstration[] {
      return Array.from({ length: n }, (_, i) => ({ seed: rng.nextU32(), actions: ['aeiou'.slice(i % 5) + 'ea'] }));
    },
  };
}

/** The job environment: one turn of at most 6 tokens. */
export function vowelsJobEnv(): JobEnv {
  return { name: 'vowels', kind: 'single', spec: vowelsSpec(), maxTurns: 1, maxNewTokens: 6 };
}
