// Train your own environment with a tool: look a code up, then answer it. `npm run example:tool` runs it.
import { type EnvSpec, extractAnswer, formatAnswer, formatToolCall, Rng, train } from '../src/mod.ts';

const NAMES = ['ada', 'bo', 'cy', 'di', 'ed', 'flo', 'gus', 'hal'];
const code = (name: string) => String(100 + new Rng(NAMES.indexOf(name), 7).nextInt(900));
const nameOf = (seed: number) => NAMES[new Rng(seed).nextInt(NAMES.length)];

export const codebookEnv: EnvSpec = {
  name: 'codebook',
  create() {
    let name = '';
    return {
      name: 'codebook',
      // A tool: the model calls it with <tool>codebook: NAME</tool> and reads <result>CODE</result>.
      tools: [{ name: 'codebook', description: "a person's 3-digit code", call: (who) => (NAMES.includes(who.trim()) ? code(who.trim()) : 'unknown') }],
      reset: async (seed) => (name = nameOf(seed), `What is ${name}'s code?`),
      step: async (action) => ({ observation: '', reward: extractAnswer(action) === code(name) ? 1 : 0, done: true }),
    };
  },
  // Demonstrations: look it up and answer (3 in 4), or guess (1 in 4): RL learns that looking up pays.
  demonstrations: (n, rng) => Array.from({ length: n }, () => {
    const seed = rng.nextU32();
    const name = nameOf(seed);
    const actions = rng.nextInt(4) > 0 ? [formatToolCall('codebook', name), formatAnswer(code(name))] : [formatAnswer(String(100 + rng.nextInt(900)))];
    return { seed, actions };
  }),
};

if (import.meta.main) {
  const r = await train({ env: codebookEnv }); // turns for tool calls, the tool list in the prompt: defaults
  console.log(`held-out success after SFT ${r.successBefore}, after GRPO ${r.successAfter}`);
}
