// jobOptions: the defaults `train()` and `npm run train` share, contexts raised for long episodes,
// any EnvSpec accepted, bad settings refused by name; and the README's example is demos/own_env.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { reverseEnv } from '../../demos/own_env.ts';
import { parseTrainArgs } from '../../src/cli/args.ts';
import { jobOptionsFrom } from '../../src/cli/train.ts';
import { ConfigError } from '../../src/errors.ts';
import { preset } from '../../src/model/presets.ts';
import { configFromHf } from '../../src/model/hf_config.ts';
import { jobEnv } from '../../src/runtime/job_envs.ts';
import { jobOptions, TRAIN_DEFAULTS } from '../../src/runtime/train.ts';

describe('jobOptions', () => {
  it('fills the zero-config job: the same options as `npm run train` with no flags', () => {
    const o = jobOptions({ env: 'calculator' });
    // Every option equal; the env specs are separate instances of the same environment.
    const { env: { spec: _a, ...env }, ...rest } = o;
    const { env: { spec: _b, ...cliEnv }, ...cliRest } = jobOptionsFrom(parseTrainArgs([]));
    expect(rest).toEqual(cliRest);
    expect(env).toEqual(cliEnv);
    expect(o).toMatchObject({
      algo: 'grpo', steps: 20, seed: 0, groups: 16, groupSize: 4, lr: 5e-3, evalEpisodes: 128, rows: 16, maxGradNorm: 1, temperature: 1,
      lora: { rank: 8, alpha: 16, targets: ['q', 'k', 'v', 'o', 'up', 'down'] },
      warmStart: { steps: 300, demos: 4096, batchSize: 32, lr: 1e-2 },
    });
    expect(o.model).toEqual(preset('gpt2-100k'));
    expect(o.maxNewTokens).toBe(jobEnv('calculator').maxNewTokens);
  });

  it('raises a from-scratch model’s context to what the environment’s episodes need', () => {
    expect(jobOptions({ env: 'calculator' }).model.maxSeqLen).toBe(128);
    expect(jobOptions({ env: 'guess-number' }).model.maxSeqLen).toBe(384);
    expect(jobOptions({ env: 'nim' }).model.maxSeqLen).toBe(512);
    // A model with more positions keeps them.
    expect(jobOptions({ env: 'guess-number', model: 'gpt2-10m' }).model.maxSeqLen).toBe(512);
    expect(jobOptionsFrom(parseTrainArgs(['--env', 'nim'])).model.maxSeqLen).toBe(512);
  });

  it('takes any EnvSpec as a single-agent job with one turn and 32 tokens unless told', () => {
    const o = jobOptions({ env: reverseEnv, maxTurns: 2, warmStart: { steps: 10 }, lora: { rank: 4 } });
    expect(o.env).toMatchObject({ name: 'reverse', kind: 'single', maxTurns: 2, maxNewTokens: TRAIN_DEFAULTS.maxNewTokens });
    expect(o.env.spec).toBe(reverseEnv);
    expect(o.warmStart).toEqual({ steps: 10, demos: 4096, batchSize: 32, lr: 1e-2 });
    expect(o.lora).toEqual({ rank: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'up', 'down'] });
    expect(jobOptions({ env: reverseEnv }).env.maxTurns).toBe(1);
    expect(jobOptions({ env: reverseEnv, lora: null, warmStart: null })).toMatchObject({ lora: null, warmStart: null });
    // gpt2 has no gate projection: a target list naming it is refused, not silently cut down.
    expect(() => jobOptions({ env: reverseEnv, lora: { targets: ['q', 'gate'] } })).toThrow(/lora.targets: gpt2 has no gate/);
    expect(jobOptions({ env: reverseEnv, model: 'llama-1m', lora: { targets: ['gate', 'q'] } }).lora!.targets).toEqual(['q', 'gate']);
  });

  it('refuses bad settings with a ConfigError naming the field', () => {
    const bad: [object, string][] = [
      [{ env: 'chess' }, 'env'],
      [{ env: { name: 'x' } }, 'env'],
      [{ env: 'calculator', algo: 'a2c' }, 'algo'],
      [{ env: 'calculator', steps: 1.5 }, 'steps'],
      [{ env: 'calculator', lr: 0 }, 'lr'],
      [{ env: 'calculator', lora: { rank: 0 } }, 'lora.rank'],
      [{ env: 'calculator', lora: { targets: ['qq'] } }, 'lora.targets'],
      [{ env: 'calculator', warmStart: { batchSize: -1 } }, 'warmStart.batchSize'],
      [{ env: 'calculator', model: 'gpt5' }, 'model'],
    ];
    for (const [s, field] of bad) {
      let err: unknown;
      try {
        jobOptions(s as never);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(s)).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message, JSON.stringify(s)).toContain(field);
    }
  });
  it('gives full-parameter RL from scratch a tenth of the LoRA rate (full GRPO at the LoRA rate collapsed the policy)', () => {
    expect(jobOptions({ env: 'calculator' }).lr).toBe(5e-3);
    expect(jobOptions({ env: 'calculator', lora: null }).lr).toBe(5e-4);
    expect(jobOptions({ env: 'calculator', lora: null, lr: 1e-3 }).lr).toBe(1e-3);
  });
});

describe('jobOptions on a pretrained model', () => {
  // Qwen2.5-0.5B's published config.json and SmolLM2-135M's (test/unit/hf_config.test.ts has them verbatim).
  const QWEN = { architectures: ['Qwen2ForCausalLM'], attention_dropout: 0.0, bos_token_id: 151643, eos_token_id: 151643, hidden_act: 'silu', hidden_size: 896, initializer_range: 0.02, intermediate_size: 4864, max_position_embeddings: 32768, max_window_layers: 24, model_type: 'qwen2', num_attention_heads: 14, num_hidden_layers: 24, num_key_value_heads: 2, rms_norm_eps: 1e-6, rope_theta: 1000000.0, sliding_window: 32768, tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.40.1', use_cache: true, use_sliding_window: false, vocab_size: 151936 };
  const SMOL = { architectures: ['LlamaForCausalLM'], attention_bias: false, attention_dropout: 0.0, bos_token_id: 1, eos_token_id: 2, hidden_act: 'silu', hidden_size: 576, initializer_range: 0.041666666666666664, intermediate_size: 1536, is_llama_config: true, max_position_embeddings: 8192, mlp_bias: false, model_type: 'llama', num_attention_heads: 9, num_hidden_layers: 30, num_key_value_heads: 3, pad_token_id: 2, pretraining_tp: 1, rms_norm_eps: 1e-05, rope_interleaved: false, rope_scaling: null, rope_theta: 100000, tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.42.3', use_cache: true, vocab_size: 49152 };
  const loaded = (c: object, repo: string) => ({ config: configFromHf(JSON.stringify(c), { name: repo }), source: { repo, revision: 'main' }, commit: 'a'.repeat(40) });
  it("takes loadPretrained's result: the job names the repo and commit, keeps the model's own context, and has no warm start by default", () => {
    const o = jobOptions({ env: 'calculator', model: loaded(QWEN, 'Qwen/Qwen2.5-0.5B-Instruct') });
    expect(o.pretrained).toEqual({ repo: 'Qwen/Qwen2.5-0.5B-Instruct', revision: 'main', commit: 'a'.repeat(40) });
    expect(o.model.maxSeqLen).toBe(32768);
    expect(o.model.vocabSize).toBe(151936);
    expect(o.warmStart).toBeNull();
    expect(o.lora?.targets).toEqual(['q', 'k', 'v', 'o', 'up', 'down']);
    // An asked-for warm start trains at the job's rate, not the from-scratch 1e-2.
    expect(jobOptions({ env: 'calculator', model: loaded(QWEN, 'q'), warmStart: { steps: 10 } }).warmStart).toMatchObject({ steps: 10, lr: o.lr });
  });
  it("learning rates by the model's width (Tinker's rule): LoRA ten times full, Qwen's exponent and Llama's", () => {
    const q = jobOptions({ env: 'calculator', model: loaded(QWEN, 'q') }).lr;
    expect(q).toBeCloseTo(5e-4 * (2000 / 896) ** 0.0775, 12);
    expect(q).toBeCloseTo(5.32e-4, 5);
    expect(jobOptions({ env: 'calculator', model: loaded(QWEN, 'q'), lora: null }).lr).toBeCloseTo(q / 10, 12);
    expect(jobOptions({ env: 'calculator', model: loaded(SMOL, 's') }).lr).toBeCloseTo(5e-4 * (2000 / 576) ** 0.781, 12);
  });
  it('trains LoRA in a pretrained SFT job, takes targets by module name, and refuses a hub setting on a preset', () => {
    expect(jobOptions({ env: 'calculator', algo: 'sft', model: loaded(SMOL, 's') }).lora?.rank).toBe(8);
    expect(jobOptions({ env: 'calculator', model: loaded(SMOL, 's'), lora: { targets: ['q_proj', 'gate_proj'] } }).lora?.targets).toEqual(['q', 'gate']);
    expect(() => jobOptions({ env: 'calculator', hub: { revision: 'x' } })).toThrow(/hub: goes with a pretrained model/);
    expect(() => jobOptions({ env: 'calculator', algo: 'dpo', lora: null, model: loaded(SMOL, 's'), warmStart: { steps: 3 } })).toThrow(/warmStart: online DPO of a full-parameter pretrained model/);
  });
});

describe('README', () => {
  it('shows demos/own_env.ts verbatim as its "train your own environment" example', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const file = readFileSync(new URL('../../demos/own_env.ts', import.meta.url), 'utf8');
    expect(readme).toContain('```ts\n' + file + '```');
  });
});
