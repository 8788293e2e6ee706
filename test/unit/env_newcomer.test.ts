// A newcomer's environment in under 30 lines (the snippet between the markers), trained on
// without touching algorithm or runtime code: it goes through the same rollout, datum and
// packing functions as the built-in environments.
import { describe, expect, it } from 'vitest';
import { grpoDatums } from '../../src/algorithms/grpo.ts';
import { packDatums } from '../../src/algorithms/pack.ts';
import { Agent } from '../../src/env/agent.ts';
import { rolloutGroups } from '../../src/env/rollout.ts';
import { fakePolicy, tok } from './env_fakes.ts';

// ---- begin: a new environment ----
import { extractAnswer } from '../../src/env/actions.ts';
import type { EnvSpec, Environment } from '../../src/env/types.ts';
import { Rng } from '../../src/util/rng.ts';

const WORDS = ['cat', 'dog', 'sun', 'map', 'pen'];

class ReverseEnv implements Environment {
  readonly name = 'reverse';
  word = '';
  async reset(seed: number) {
    this.word = WORDS[new Rng(seed).nextInt(WORDS.length)];
    return `Reverse "${this.word}". Reply <answer>…</answer>.`;
  }
  async step(action: string) {
    const ok = extractAnswer(action) === [...this.word].reverse().join('');
    return { observation: ok ? 'Right.' : 'Wrong.', reward: ok ? 1 : 0, done: true };
  }
}

export const reverseEnv: EnvSpec = {
  name: 'reverse',
  create: () => new ReverseEnv(),
  demonstrations: (n, rng) => Array.from({ length: n }, () => {
    const seed = rng.nextU32();
    const word = WORDS[new Rng(seed).nextInt(WORDS.length)];
    return { seed, actions: [`<answer>${[...word].reverse().join('')}</answer>`] };
  }),
};
// ---- end ----

describe('a newcomer’s environment', () => {
  it('rolls out, scores, and becomes a packed GRPO batch with no other code', async () => {
    // Half the attempts reverse the word, half echo it.
    const policy = fakePolicy((p, r) => {
      const w = /Reverse "(\w+)"/.exec(p)![1];
      return `<answer>${r.seed % 2 ? [...w].reverse().join('') : w}</answer>`;
    });
    const batch = await rolloutGroups(reverseEnv, new Agent({ sample: policy, tokenizer: tok }), { groups: 4, groupSize: 4, seed: 1 });
    const rewards = batch.groups.flatMap((g) => g.trajectories.map((t) => t.reward));
    expect(rewards.filter((r) => r === 1).length).toBeGreaterThan(0);
    expect(rewards.filter((r) => r === 0).length).toBeGreaterThan(0);
    const step = packDatums(grpoDatums(batch.groups), { rows: 8, seqLen: 128, seed: 1, padId: tok.padId, aggregation: 'sequence_mean' });
    expect(step.totalSequences).toBe(16);
    const demos = reverseEnv.demonstrations!(3, new Rng(0));
    expect(demos.every((d) => /^<answer>\w{3}<\/answer>$/.test(d.actions[0]))).toBe(true);
  });
});
