/**
 * The transformer block — one forward for every family and every pass (nanochat's one
 * `Block.forward(x, cos_sin, kv_cache)`): training (saving what backward.ts needs), prefill and
 * decode (KV cache). The family's architecture record (arch.ts) says which steps run; the pass
 * says where tensors live and how attention reaches its keys:
 *   - training gives per-block saved tensors (forward.ts allocBlock) and xin ≠ mid ≠ xout;
 *   - inference gives one set of scratch tensors reused by every layer and xin = mid = xout (the
 *     residual stream updated in place), which lets products accumulate straight into it and
 *     GPT-2's GELU ride in the up product's epilogue (`fuse`).
 *
 * Legend: N = B·T rows, C width, Hq/Hkv heads, D head dim, Q = Hq·D, K = Hkv·D, F MLP width.
 *
 *   ln1 = norm(xin)                                                     [N, C]
 *   q, k, v = linear(ln1) (+ LoRA)                                      [N, Q], [N, K], [N, K]
 *   qkNorm:  q = rmsnorm_D(qRaw), k = rmsnorm_D(kRaw) per head           (Qwen3, Gemma 3)
 *   rope:    q, k rotated in place at `positions` with the layer's frequencies
 *   att = attend(layer)                   causal, the layer's window and the model's scale
 *   o = linear(att); sandwich: o = norm(o)                              [N, C]
 *   mid = xin + o
 *   ln2 = norm(mid)
 *   gelu:   act = gelu(up(ln2));  swiglu/geglu: act = silu|gelu(gate(ln2))·up(ln2)   [N, F]
 *   m = down(act); sandwich: m = norm(m)
 *   xout = mid + m
 */
import type { Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';
import { geluForward } from '../ops/gelu.ts';
import { matmul } from '../ops/matmul.ts';
import { layernormForward } from '../ops/layernorm.ts';
import { loraLinearForward } from '../ops/lora_linear.ts';
import { residualAdd, residualAddInPlace } from '../ops/residual.ts';
import { rmsnormForward } from '../ops/rmsnorm.ts';
import { swigluForward } from '../ops/swiglu.ts';
import { ShapeError } from '../errors.ts';
import { type ArchRecord, archOf, layerPlan, type LayerSettings } from './arch.ts';
import type { LoraTarget, ModelConfig } from './config.ts';
import { moduleName } from './params.ts';
import { ropeQK } from './rope.ts';
import type { AdapterWeights, ModelWeights } from './weights_view.ts';

/** Saved statistics of one norm: mean (LayerNorm only) and rstd, one per row. */
export interface NormSaved {
  readonly mean: Tensor | null;
  readonly rstd: Tensor;
}

/**
 * The tensors one block writes. Training: saved per block (or one shared set under recompute);
 * inference: scratch shared by every layer (ln1 may be ln2, n1 may be n2, ...).
 */
export interface BlockActs {
  readonly ln1: Tensor; // [N, C]
  readonly n1: NormSaved;
  /** qkNorm: the q and k projections before their per-head norm, and that norm's stats [N·H]. */
  readonly qRaw: Tensor | null; // [N, Q]
  readonly kRaw: Tensor | null; // [N, K]
  readonly nq: NormSaved | null;
  readonly nk: NormSaved | null;
  readonly q: Tensor; // [N, Q] as attention read it (normed, rotated)
  readonly k: Tensor; // [N, K]
  readonly v: Tensor; // [N, K]
  readonly att: Tensor; // [N, Q]
  /** Attention's log-sum-exp [B, Hq, T] (training saves it for the backward; prefill scratch; decode none). */
  readonly lse: Tensor | null;
  /** sandwich: the o projection before its norm, and the norm's stats. */
  readonly attnOut: Tensor | null; // [N, C]
  readonly npa: NormSaved | null;
  readonly mid: Tensor; // [N, C]
  readonly ln2: Tensor; // [N, C]
  readonly n2: NormSaved;
  readonly h: Tensor; // [N, F] gelu: up's output (pre-GELU); gated: gate's output
  readonly up: Tensor | null; // [N, F] gated: up's output
  readonly act: Tensor; // [N, F]
  /** sandwich: the down projection before its norm, and the norm's stats. */
  readonly mlpOut: Tensor | null; // [N, C]
  readonly npm: NormSaved | null;
  /** LoRA's x·Aᵀ [N, R] per adapted target of this block. */
  readonly u: ReadonlyMap<LoraTarget, Tensor>;
}

/** What the block reads besides its tensors. */
export interface BlockEnv {
  readonly cfg: ModelConfig;
  readonly weights: ModelWeights;
  readonly adapter?: AdapterWeights | null;
}

/** Where the block's rows sit: positions i32 [B, T] (RoPE), and how attention is done. */
export interface BlockPass {
  readonly B: number;
  readonly T: number;
  readonly positions: Tensor;
  /** Writes s.att from s.q, s.k, s.v (and the cache, for inference) for `layer`. */
  readonly attend: (rec: Recorder, layer: number, settings: LayerSettings, s: BlockActs) => void;
  /**
   * Inference: xin = mid = xout, updated in place; products may accumulate into the residual and
   * GELU may ride in the up product's epilogue. Training: false.
   */
  readonly inPlace: boolean;
  /** [N, C] scratch: a projection before its residual add (or its norm). */
  readonly proj: Tensor;
  /** [N, C] scratch: a sandwich norm's output before its residual add (sandwich families only). */
  readonly post: Tensor | null;
}

/** A tensor sharing `t`'s buffer with another shape of at most as many elements (never release it). */
export function view(t: Tensor, shape: readonly number[], label = t.label): Tensor {
  return t.view(shape, label);
}

/** The 4-D attention layout of an [N, H·D] tensor: [B, T, H, D]. */
export function heads(t: Tensor, B: number, T: number, H: number, D: number): Tensor {
  return view(t, [B, T, H, D]);
}

/**
 * y (=, or += with `accumulate`) = x·Wᵀ (+ b) (+ (α/R)·(x·Aᵀ)·Bᵀ, u = x·Aᵀ written) for module `m`;
 * `activation` applies GELU to the result in the product's epilogue.
 */
export function linearForward(rec: Recorder, env: BlockEnv, y: Tensor, x: Tensor, m: string, u: Tensor | undefined,
  opts: { accumulate?: boolean; activation?: 'gelu' } = {}): void {
  const w = env.weights.param(`${m}.weight`);
  const bias = env.weights.has(`${m}.bias`) ? env.weights.param(`${m}.bias`) : undefined;
  const lora = env.adapter?.module(m);
  const { accumulate, activation } = opts;
  if (lora) {
    if (!u) throw new ShapeError('linear', `${m} is adapted but no tensor for x·Aᵀ was given`);
    const R = lora.a.shape[0];
    const rows = x.size / x.shape[x.shape.length - 1];
    if (lora.a.shape.length !== 2 || u.shape[0] !== rows || u.shape[1] < R) {
      throw new ShapeError('linear', `module ${m}: a (${lora.a}) must be [R, in] and x·Aᵀ (${u}) [rows of x, ≥ R]`);
    }
    // Inference shares one scratch of the adapter's rank: a module of rank R uses its first R columns.
    const uR = u.shape[1] === R ? u : view(u, [rows, R], `${u.label}/${m}`);
    loraLinearForward(rec, y, uR, x, w, lora.a, lora.b, { alpha: env.adapter!.lora.alpha, scale: lora.scale, bias, accumulate, activation });
  } else {
    matmul(rec, y, x, w, { transB: true, bias, accumulate, activation });
  }
}

/** Rows of stats a norm over `inp` [rows, width] keeps. */
function normRows(inp: Tensor): number {
  return inp.size / inp.shape[inp.shape.length - 1];
}

/** out = norm(inp) with `prefix`.weight (and .bias for LayerNorm), the record's kind and offset; writes (=) out and the stats. */
export function normForward(rec: Recorder, env: BlockEnv, out: Tensor, s: NormSaved, inp: Tensor, prefix: string): void {
  const { cfg, weights } = env;
  const arch = archOf(cfg);
  const rows = normRows(inp);
  const rstd = view(s.rstd, [rows]);
  if (arch.norm === 'layernorm') {
    layernormForward(rec, out, view(s.mean!, [rows]), rstd, inp, weights.param(`${prefix}.weight`), weights.param(`${prefix}.bias`), cfg.normEps);
  } else {
    rmsnormForward(rec, out, rstd, inp, weights.param(`${prefix}.weight`), cfg.normEps, { offset: arch.normOffset });
  }
}

/** Writes (=) s.q, s.k, s.v from s.ln1: projections, then the per-head norms and RoPE the record asks for. */
function qkv(rec: Recorder, env: BlockEnv, arch: ArchRecord, pass: BlockPass, s: BlockActs, l: number, settings: LayerSettings): void {
  const { nHead: Hq, nKvHead: Hkv, headDim: D } = env.cfg;
  const { B, T } = pass;
  const lin = (y: Tensor, t: LoraTarget) => linearForward(rec, env, y, s.ln1, moduleName(l, t), s.u.get(t));
  if (arch.qkNorm) {
    lin(s.qRaw!, 'q');
    lin(s.kRaw!, 'k');
    const N = B * T;
    normForward(rec, env, view(s.q, [N * Hq, D]), s.nq!, view(s.qRaw!, [N * Hq, D]), `layers.${l}.attn.q_norm`);
    normForward(rec, env, view(s.k, [N * Hkv, D]), s.nk!, view(s.kRaw!, [N * Hkv, D]), `layers.${l}.attn.k_norm`);
  } else {
    lin(s.q, 'q');
    lin(s.k, 'k');
  }
  lin(s.v, 'v');
  if (settings.invFreq) ropeQK(rec, settings.invFreq, heads(s.q, B, T, Hq, D), heads(s.k, B, T, Hkv, D), pass.positions);
}

/**
 * A projection into the residual stream: out = acc + [norm](linear(x)). Inference without a
 * sandwich norm accumulates the product into the stream; otherwise the product goes to `saved`
 * (or the pass's proj scratch), through the norm when the record has one, and then is added.
 */
function residualBranch(rec: Recorder, env: BlockEnv, arch: ArchRecord, pass: BlockPass, out: Tensor, acc: Tensor, x: Tensor,
  m: string, u: Tensor | undefined, saved: Tensor | null, stats: NormSaved | null, postNorm: string): void {
  if (pass.inPlace && !arch.sandwichNorms) {
    linearForward(rec, env, out, x, m, u, { accumulate: true });
    return;
  }
  const y = saved ?? pass.proj;
  linearForward(rec, env, y, x, m, u);
  let add = y;
  if (arch.sandwichNorms) {
    normForward(rec, env, pass.post!, stats!, y, postNorm);
    add = pass.post!;
  }
  if (pass.inPlace) residualAddInPlace(rec, out, add);
  else residualAdd(rec, out, acc, add);
}

/** Block l: xin → xout, writing every tensor of `s` (see BlockActs) — the one block forward. */
export function blockForward(rec: Recorder, env: BlockEnv, pass: BlockPass, s: BlockActs, l: number, xin: Tensor, xout: Tensor): void {
  const arch = archOf(env.cfg);
  const settings = layerPlan(env.cfg)[l];
  const m = (t: LoraTarget) => moduleName(l, t);
  const mid = pass.inPlace ? xin : s.mid;
  // attention half
  normForward(rec, env, s.ln1, s.n1, xin, `layers.${l}.attn_norm`);
  qkv(rec, env, arch, pass, s, l, settings);
  pass.attend(rec, l, settings, s);
  residualBranch(rec, env, arch, pass, mid, xin, s.att, m('o'), s.u.get('o'), s.attnOut, s.npa, `layers.${l}.attn_post_norm`);
  // MLP half
  normForward(rec, env, s.ln2, s.n2, mid, `layers.${l}.mlp_norm`);
  const lin = (y: Tensor, t: LoraTarget, activation?: 'gelu') => linearForward(rec, env, y, s.ln2, m(t), s.u.get(t), { activation });
  if (arch.mlp === 'gelu') {
    if (pass.inPlace) lin(s.act, 'up', 'gelu'); // the GELU in the product's epilogue; h is not kept
    else {
      lin(s.h, 'up');
      geluForward(rec, s.act, s.h);
    }
  } else {
    lin(s.h, 'gate');
    lin(s.up!, 'up');
    swigluForward(rec, s.act, s.h, s.up!, { act: arch.mlp === 'geglu' ? 'gelu' : 'silu' });
  }
  if (pass.inPlace && xout !== xin) throw new ShapeError('block', 'an in-place pass updates the residual stream in place: xout must be xin');
  residualBranch(rec, env, arch, pass, xout, mid, s.act, m('down'), s.u.get('down'), s.mlpOut, s.npm, `layers.${l}.mlp_post_norm`);
}
