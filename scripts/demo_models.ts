/**
 * Makes the warm-started models the demo pages ship (demos/src/lib/models/, read by
 * demos/src/lib/shipped.ts): for each environment and preset below, the SFT warm start that
 * `npm run train` runs before RL (its defaults: full-parameter SFT of the seeded from-scratch
 * model on the environment's demonstrations), taken from a train() run whose RL part is one
 * minimal step: its result's `trained.base` is the warm-started model the LoRA applies to, and
 * `successBefore` that model's held-out success. For the arena's two-agent games, the shared
 * warm start `trainAgents` runs first (its defaults; a run with no RL steps). Written as
 * safetensors with the job's config, the settings and the held-out success in the metadata.
 *
 *   npx deno run --allow-read --allow-write --allow-env --config deno.json scripts/demo_models.ts [ENV/MODEL ...]
 *
 * Runs are seeded: the same adapter and Deno give the same bytes (another adapter may round
 * differently). On llvmpipe, 2 cores: calculator ~3 min.
 */
import { parseArgs } from 'node:util';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type AgentsSettings, bargainEnv, type EnvName, type HostParams, type ModelConfig, nimEnv, signalEnv, train, trainAgents, type TurnBasedEnvSpec, writeSafetensors } from '../src/mod.ts';
import { parameterSpecs } from '../src/model/params.ts';
import { NIM_JOB } from '../src/runtime/job_envs.ts';

type Game = { game: () => TurnBasedEnvSpec; model: string; seed: number } & Pick<AgentsSettings, 'context' | 'warmStart'>;

/** What ships, per `${env}/${model}`: a train() job's warm start, or the arena's two-agent warm start of a game. */
const MODELS: Readonly<Record<string, { env: EnvName; model: string; seed: number } | Game>> = {
  'calculator/gpt2-100k': { env: 'calculator', model: 'gpt2-100k', seed: 0 },
  // The arena's games, as demos/src/pages/arena.ts plays them.
  'bargain/gpt2-100k': { game: () => bargainEnv(), model: 'gpt2-100k', seed: 0 },
  'signal/gpt2-100k': { game: () => signalEnv({ symbols: 'abcd' }), model: 'gpt2-100k', seed: 0 },
  // The bench's nim (the jobs' nim, context 512): a long warm start at a high rate, as the paper
  // part's arena measured it needs (test/bench/paper_settings.ts); ~24 min on llvmpipe.
  'nim/gpt2-100k': { game: () => nimEnv(NIM_JOB), model: 'gpt2-100k', seed: 0, context: 512, warmStart: { steps: 1400, demos: 2048, batchSize: 32, lr: 1e-2 } },
};

/** The warm start and what to say of it. */
async function warmStart(key: string, m: (typeof MODELS)[string]): Promise<{ cfg: ModelConfig; tensors: HostParams; made: Record<string, unknown> }> {
  if ('game' in m) {
    const env = m.game();
    const r = await trainAgents({
      env, seats: Array.from({ length: env.numPlayers }, (_, k) => ({ name: `p${k + 1}` })), model: m.model, seed: m.seed, steps: 0, evalGames: 0,
      ...(m.context ? { context: m.context } : {}), ...(m.warmStart ? { warmStart: m.warmStart } : {}),
    });
    return { cfg: r.cfg, tensors: r.base, made: { by: 'scripts/demo_models.ts', trainAgents: true, seed: m.seed, ...(m.warmStart ? { warmStart: m.warmStart } : {}), seconds: Math.round(r.wallSeconds) } };
  }
  // train()'s default warm start; the one RL step (one task, two attempts) leaves the base as it was.
  const r = await train({ env: m.env, model: m.model, seed: m.seed, evalEpisodes: 128, steps: 1, groups: 1, groupSize: 2 });
  if (!r.trained.base) throw new Error(`${key}: the run returned no warm-started base`);
  return { cfg: r.trained.cfg, tensors: r.trained.base, made: { by: 'scripts/demo_models.ts', warmStart: r.warmStartSteps, seed: m.seed, success: r.successBefore, evalEpisodes: r.evalEpisodes, device: r.device.description } };
}

const { positionals } = parseArgs({ args: Deno.args, allowPositionals: true });
const wanted = positionals.length > 0 ? positionals : Object.keys(MODELS);
for (const key of wanted) {
  const m = MODELS[key];
  if (!m) throw new Error(`unknown model "${key}" (known: ${Object.keys(MODELS).join(', ')})`);
  const { cfg, tensors, made } = await warmStart(key, m);
  const meta = { format: 'pt', 'webtinker.model': JSON.stringify(cfg), 'webtinker.made': JSON.stringify(made) };
  const name = 'game' in m ? m.game().name : m.env;
  const file = join(import.meta.dirname!, '..', 'demos', 'src', 'lib', 'models', `${name}-${m.model}.safetensors`);
  const specs = parameterSpecs(cfg);
  await writeFile(file, writeSafetensors(specs.map((s) => ({ name: s.name, shape: s.shape, dtype: 'F32' as const, data: tensors[s.name] })), { metadata: meta }));
  console.log(`${key}: ${JSON.stringify(made)}; wrote ${file}`);
}
