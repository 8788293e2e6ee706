/**
 * promptEnv — the front door for a TRL user, who has prompts and a reward function rather than an
 * environment class: one turn per episode (tool calls before it, when tools are given), the
 * episode's prompt chosen by its seed, the completion scored by `reward`. With `demonstrations`
 * (a good completion per prompt) it also feeds the SFT warm start.
 *
 *   train({ env: promptEnv(['What is 2+3?', …], (completion, prompt) => …) })
 *
 * Departure from TRL's GRPOTrainer: the reward sees the action text as the agent wrote it (tool
 * calls and their results stay in the episode, not in the completion), and a reward that throws or
 * is not finite drops the episode with its reason, as any environment's would.
 */
import { InvalidInputError } from '../errors.ts';
import type { Demonstration, EnvSpec, Tool } from '../types.ts';

export interface PromptEnvOptions {
  /** Name recorded in trajectories and metrics (default 'prompts'). */
  readonly name?: string;
  /** Tools the agent may call before it answers (each call is a turn: give train() maxTurns or let it default). */
  readonly tools?: readonly Tool[];
  /** A good completion for a prompt (its actions, or one action as a string), for the warm start. */
  readonly demonstrations?: (prompt: string, index: number) => string | readonly string[];
}

/** The reward of a completion: a finite number (a Promise of one is fine). */
export type PromptReward = (completion: string, prompt: string, index: number) => number | Promise<number>;

export function promptEnv(prompts: readonly string[], reward: PromptReward, options: PromptEnvOptions = {}): EnvSpec {
  if (!Array.isArray(prompts) || prompts.length === 0 || !prompts.every((p) => typeof p === 'string' && p.length > 0)) {
    throw new InvalidInputError('promptEnv', 'prompts must be a non-empty array of non-empty strings');
  }
  if (typeof reward !== 'function') throw new InvalidInputError('promptEnv', 'reward must be a function (completion, prompt, index) => number');
  const name = options.name ?? 'prompts';
  const list = [...prompts];
  const indexOf = (seed: number) => seed % list.length;
  const demos = options.demonstrations;
  return {
    name,
    create() {
      let i = -1;
      return {
        name,
        ...(options.tools ? { tools: options.tools } : {}),
        reset: async (seed) => list[(i = indexOf(seed))],
        step: async (action) => {
          if (i < 0) throw new InvalidInputError('promptEnv', 'step before reset');
          const r = await reward(action, list[i], i);
          return { observation: '', reward: r, done: true };
        },
      };
    },
    ...(demos ? {
      demonstrations: (n, rng): Demonstration[] => Array.from({ length: n }, () => {
        const seed = rng.nextU32();
        const d = demos(list[indexOf(seed)], indexOf(seed));
        return { seed, actions: typeof d === 'string' ? [d] : [...d] };
      }),
    } : {}),
  };
}
