// Train your own environment: reverse three letters. `npm run example` runs this file.
import { type EnvSpec, extractAnswer, Rng, train } from '../src/mod.ts';

const word = (seed: number) => [0, 1, 2].map((i) => 'abcd'[new Rng(seed, i).nextInt(4)]).join('');
const reverse = (w: string) => [...w].reverse().join('');

export const reverseEnv: EnvSpec = {
  name: 'reverse',
  create() {
    let w = '';
    return {
      name: 'reverse',
      reset: async (seed) => (w = word(seed), `Reverse ${w}.`),
      step: async (action) => {
        const ok = extractAnswer(action) === reverse(w);
        return { observation: ok ? 'Right.' : 'Wrong.', reward: ok ? 1 : 0, done: true };
      },
    };
  },
  // Demonstrations for the SFT warm start, right 3 times in 4: RL has to learn the rest.
  demonstrations: (n, rng) => Array.from({ length: n }, () => {
    const seed = rng.nextU32();
    return { seed, actions: [`<answer>${rng.nextInt(4) > 0 ? reverse(word(seed)) : word(seed)}</answer>`] };
  }),
};

if (import.meta.main) {
  const r = await train({ env: reverseEnv, warmStart: { steps: 300 }, steps: 20 });
  console.log(`held-out success after SFT ${r.successBefore}, after GRPO ${r.successAfter}`);
}
