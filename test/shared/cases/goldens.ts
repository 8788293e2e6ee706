/**
 * The engine against Hugging Face transformers (test/goldens/, written by
 * scripts/goldens/make_goldens.py on tiny random twins of published checkpoints, computed in f64
 * from the bf16/f32 files committed here). Each case loads the files as a user would —
 * configFromHf, importHfWeights, importPeftAdapter — and compares, on every tuning the suite's
 * adapter can run (its own, then the real-GPU kernel configurations; see goldenCase):
 *   - logits [B, T, V] and per-token log-probs of the next token [B, T-1];
 *   - the mean next-token cross entropy (HF's labels = input_ids loss) and the gradient of every
 *     checkpoint tensor (trainable 'all', our gradients mapped to HF names and layouts by
 *     exportHfWeights: GPT-2's q/k/v re-fused into c_attn, Conv1D weights transposed back);
 *   - with the PEFT adapter (base frozen): logits, loss and the gradient of every lora_A / lora_B
 *     (a fused GPT-2 c_attn adapter: q, k and v share its A, so A's gradient is the sum of theirs);
 *   - greedy decoding of 8 tokens after each row's first 5 (prefill + KV-cache decode): equal ids
 *     (the script made sure no step has a top-2 logit gap under 1e-2, so f32 cannot flip a tie).
 *
 * One error measure for every tensor: max_i |got_i − want_i| / max_i |want_i| (relErr), at most
 * BOUND = 1e-4; a scalar loss: |got − want| / |want|. The reference is f64, so this measures the
 * engine's f32 error alone.
 *
 * The table (GOLDEN_ROWS, test/shared/goldens.ts) holds every family: gpt2, smollm2 (llama),
 * qwen2, llama32 (llama3 RoPE scaling), qwen3 (q/k norms, head_dim ≠ hidden/heads) and gemma3
 * (gemma3_text: (1 + w) sandwich norms, GeGLU, √C embeddings, a sliding window that bites).
 */
import { assert } from 'chai';
import type { PackedBatch } from '../../../src/algorithms/pack.ts';
import type { GpuContext } from '../../../src/gpu/device.ts';
import { BaseModel } from '../../../src/model/base_model.ts';
import type { LoraConfig, ModelConfig } from '../../../src/model/config.ts';
import { generate } from '../../../src/model/generate.ts';
import { configFromHf } from '../../../src/model/hf_config.ts';
import { LoraAdapter } from '../../../src/model/lora.ts';
import { moduleName } from '../../../src/model/params.ts';
import { importPeftAdapter, peftModule } from '../../../src/model/peft.ts';
import { Trainer } from '../../../src/model/trainer.ts';
import { exportHfWeights, importHfWeights } from '../../../src/model/weight_names.ts';
import { bothTunings } from '../gpu.ts';
import { type Golden, GOLDEN_ROWS, type GoldenName, loadGolden } from '../goldens.ts';
import type { GpuCase } from '../register.ts';

export const BOUND = 1e-4;

/** max_i |got_i − want_i| / max_i |want_i| (see the file header). */
export function relErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  if (got.length !== want.length) throw new Error(`relErr: ${got.length} values against ${want.length}`);
  let d = 0, m = 0;
  for (let i = 0; i < want.length; i++) {
    d = Math.max(d, Math.abs(got[i] - want[i]));
    m = Math.max(m, Math.abs(want[i]));
  }
  return m === 0 ? d : d / m;
}

/** HF's loss on a full batch: every row predicts its next tokens; the last position has no target. */
export function nextTokenBatch(g: Golden): PackedBatch {
  const { B, T } = g;
  const N = B * T;
  const targetsBT = new Int32Array(N);
  const lossMaskBT = new Float32Array(N);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T - 1; t++) {
      targetsBT[b * T + t] = g.inputIds[b * T + t + 1];
      lossMaskBT[b * T + t] = 1;
    }
  }
  const count = B * (T - 1);
  const seqIdBT = Int32Array.from({ length: N }, (_, i) => Math.floor(i / T));
  const f = () => new Float32Array(N);
  return {
    rows: B, seqLen: T, inputsBT: g.inputIds.slice(), targetsBT, lossMaskBT, tokenScaleBT: Float32Array.from(lossMaskBT, (m) => m / count),
    oldLogprobsBT: f(), advantagesBT: f(), returnsBT: null, oldValuesBT: null, refLogprobsBT: null, seqIdBT, sequenceIdBT: seqIdBT.slice(),
    sequenceIdB: Int32Array.from({ length: B }, (_, b) => b), lengthB: new Int32Array(B).fill(T), pairIdB: new Int32Array(B).fill(-1), pairRoleB: new Int8Array(B),
  };
}

/** [B·T] log-probs of the targets → the [B, T-1] of positions that have one. */
function dropLast(lpBT: Float32Array, B: number, T: number): Float32Array {
  const out = new Float32Array(B * (T - 1));
  for (let b = 0; b < B; b++) out.set(lpBT.subarray(b * T, b * T + T - 1), b * (T - 1));
  return out;
}

/** Our adapter gradients under PEFT's tensor names: modules sharing one PEFT module sum A, stack B's rows. */
export function peftGradients(cfg: ModelConfig, lora: LoraConfig, grads: Readonly<Record<string, Float32Array>>): Record<string, Float32Array> {
  const out: Record<string, Float32Array> = {};
  for (let i = 0; i < cfg.nLayer; i++) {
    const groups = new Map<string, string[]>();
    for (const t of lora.targets) {
      const m = peftModule(cfg, i, t);
      groups.set(m, [...(groups.get(m) ?? []), moduleName(i, t)]);
    }
    for (const [m, ours] of groups) {
      const a = grads[`${ours[0]}.lora_a`].slice();
      for (const o of ours.slice(1)) grads[`${o}.lora_a`].forEach((x, k) => a[k] += x);
      const bs = ours.map((o) => grads[`${o}.lora_b`]);
      const b = new Float32Array(bs.reduce((s, x) => s + x.length, 0));
      let at = 0;
      for (const x of bs) {
        b.set(x, at);
        at += x.length;
      }
      out[`base_model.model.${m}.lora_A.weight`] = a;
      out[`base_model.model.${m}.lora_B.weight`] = b;
    }
  }
  return out;
}

const CE = { kind: 'cross_entropy', aggregation: 'token_mean' } as const;

/** Every `prefix<name>` tensor of the golden against `got[name]`, with the names required to match exactly. */
async function checkGrads(g: Golden, prefix: string, got: Record<string, Float32Array>, what: string, worst: { err: number; name: string }): Promise<void> {
  const want = g.golden.names().filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length));
  assert.sameMembers(Object.keys(got), want, `${what}: gradient names`);
  for (const n of want) {
    const e = relErr(got[n], await g.f32(prefix + n));
    if (e > worst.err) Object.assign(worst, { err: e, name: n });
    assert.isAtMost(e, BOUND, `${what}: gradient of ${n}, error ${e.toExponential(2)}`);
  }
}

/** Largest errors per golden and tuning (printed for the report, and checked by each case). */
export const goldenErrors: Record<string, Record<string, number | string>> = {};

async function runOn(ctx: GpuContext, g: Golden, cfg: ModelConfig, params: Record<string, Float32Array>): Promise<void> {
  const tag = `${g.name} [${ctx.tuning} tuning]`;
  const batch = nextTokenBatch(g);
  const { B, T } = g;
  const errs: Record<string, number | string> = {};
  const model = BaseModel.upload(ctx, cfg, params);
  try {
    // Base: trainable 'all', no adapter.
    const full = await Trainer.create(model, { trainable: 'all' });
    try {
      const { logits, logprobsBT } = await full.computeLogprobs(batch, { logits: true });
      errs.logits = relErr(logits!, await g.f32('logits'));
      errs.logprobs = relErr(dropLast(logprobsBT, B, T), await g.f32('logprobs'));
      const fb = await full.forwardBackward(batch, CE);
      errs.loss = relErr([fb.loss], await g.f32('loss'));
      const hf = Object.fromEntries(exportHfWeights(cfg, await full.readGradients()).map((t) => [t.name, t.data]));
      const worst = { err: 0, name: '' };
      await checkGrads(g, 'grad.', hf, `${tag} base`, worst);
      Object.assign(errs, { grads: worst.err, worstGrad: worst.name });
    } finally {
      full.release();
    }
    for (const k of ['logits', 'logprobs', 'loss'] as const) assert.isAtMost(errs[k] as number, BOUND, `${tag}: ${k} error ${(errs[k] as number).toExponential(2)}`);

    // Greedy decoding (prefill + KV cache), base weights.
    const G = g.greedy.length / B;
    const P = g.meta.greedy.prompt_tokens;
    const prompts = Array.from({ length: B }, (_, b) => Array.from(g.inputIds.subarray(b * T, b * T + P)));
    const r = await generate(ctx, model, null, prompts, { maxTokens: G, temperature: 0, seed: 0 });
    for (let b = 0; b < B; b++) assert.deepEqual(r.tokens[b], Array.from(g.greedy.subarray(b * G, (b + 1) * G)), `${tag}: greedy tokens of row ${b}`);

    // LoRA: the PEFT adapter, base frozen.
    const { lora, tensors } = await importPeftAdapter(cfg, g.adapterConfig, g.adapter);
    const adapter = LoraAdapter.fromHost(ctx, cfg, lora, tensors);
    const job = await Trainer.create(model, { trainable: 'lora', adapter });
    try {
      const { logits, logprobsBT } = await job.computeLogprobs(batch, { logits: true });
      errs.loraLogits = relErr(logits!, await g.f32('lora.logits'));
      errs.loraLogprobs = relErr(dropLast(logprobsBT, B, T), await g.f32('lora.logprobs'));
      const fb = await job.forwardBackward(batch, CE);
      errs.loraLoss = relErr([fb.loss], await g.f32('lora.loss'));
      const worst = { err: 0, name: '' };
      await checkGrads(g, 'lora.grad.', peftGradients(cfg, lora, await job.readGradients()), `${tag} LoRA`, worst);
      Object.assign(errs, { loraGrads: worst.err, worstLoraGrad: worst.name });
    } finally {
      job.release();
      adapter.release();
    }
    for (const k of ['loraLogits', 'loraLogprobs', 'loraLoss'] as const) assert.isAtMost(errs[k] as number, BOUND, `${tag}: ${k} error ${(errs[k] as number).toExponential(2)}`);
  } finally {
    model.release();
    goldenErrors[tag] = errs;
  }
}

/**
 * Two cases per golden: the adapter's own tuning, then the real-GPU kernel configurations
 * (bothTunings: forced on a software adapter; on a hardware adapter its own tuning already is
 * that, and the second case repeats the first). Split so that each stays well inside the browser
 * suite's 120 s per test on SwiftShader, where the first one compiles every pipeline.
 */
function goldenCase(name: GoldenName, tuning: 'own' | 'gpu'): GpuCase {
  return {
    name: `goldens: ${name} vs transformers, ${tuning === 'own' ? "the adapter's own tuning" : 'gpu tuning'} — logits, log-probs, loss, every base and LoRA gradient, greedy tokens`,
    fn: async (own) => {
      const ctx = tuning === 'own' ? own : (await bothTunings()).find((c) => c.tuning === 'gpu');
      assert.isDefined(ctx, 'bothTunings() has a gpu-tuned context');
      const g = await loadGolden(name);
      try {
        const cfg = configFromHf(g.config, { name });
        await runOn(ctx!, g, cfg, await importHfWeights(cfg, g.checkpoint));
      } finally {
        await g.close();
      }
    },
  };
}

/** Prints the largest errors of the cases that ran, and checks that every row ran on every tuning. */
const reportCase: GpuCase = {
  name: 'goldens: every case ran on every tuning; largest errors per case and tuning (report)',
  fn: async () => {
    const fmt = (v: number | string) => (typeof v === 'number' ? v.toExponential(2) : v);
    for (const [tag, e] of Object.entries(goldenErrors)) console.log(`[goldens] ${tag}: ${Object.entries(e).map(([k, v]) => `${k} ${fmt(v)}`).join(', ')}`);
    const tunings = (await bothTunings()).map((c) => c.tuning);
    const want = GOLDEN_ROWS.flatMap((n) => tunings.map((t) => `${n} [${t} tuning]`));
    assert.sameMembers(Object.keys(goldenErrors), want, 'golden cases and tunings that ran');
    for (const e of Object.values(goldenErrors)) assert.isAtMost(Math.max(e.grads as number, e.loraGrads as number), BOUND);
  },
};

export const goldenCases: GpuCase[] = [...GOLDEN_ROWS.flatMap((n) => [goldenCase(n, 'own'), goldenCase(n, 'gpu')]), reportCase];
