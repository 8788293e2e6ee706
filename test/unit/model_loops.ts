/**
 * A second, independent transformer for checking the tfjs reference model: plain loops in f64 over
 * one sequence (every token sees the earlier ones), straight from the canonical parameter dict.
 * Written per token and per head with explicit sums — no shared code with test/reference/model_tf.ts
 * — so an agreement between the two is evidence, not a tautology. Slow; for tiny configs only.
 */
import type { LoraConfig, ModelConfig } from '../../src/model/config.ts';

type P = Readonly<Record<string, Float32Array>>;

export interface LoopOptions {
  lora?: { config: LoraConfig; tensors: P };
  valueHead?: boolean;
  /** Position of the first token (default 0). */
  start?: number;
}

/** y[o] = Σ_i W[o, i]·x[i] + b[o] (+ LoRA). W [out, in]. */
function lin(p: P, module: string, x: number[], opts: LoopOptions): number[] {
  const w = p[`${module}.weight`];
  const b = p[`${module}.bias`];
  const inp = x.length;
  const out = w.length / inp;
  const y = new Array<number>(out);
  for (let o = 0; o < out; o++) {
    let s = b ? b[o] : 0;
    for (let i = 0; i < inp; i++) s += w[o * inp + i] * x[i];
    y[o] = s;
  }
  const a = opts.lora?.tensors[`${module}.lora_a`];
  const bb = opts.lora?.tensors[`${module}.lora_b`];
  if (opts.lora && a && bb) {
    const R = opts.lora.config.rank;
    const scale = opts.lora.config.alpha / R;
    const xa = new Array<number>(R).fill(0);
    for (let r = 0; r < R; r++) for (let i = 0; i < inp; i++) xa[r] += a[r * inp + i] * x[i];
    for (let o = 0; o < out; o++) {
      let s = 0;
      for (let r = 0; r < R; r++) s += bb[o * R + r] * xa[r];
      y[o] += scale * s;
    }
  }
  return y;
}

function normalize(cfg: ModelConfig, p: P, prefix: string, x: number[]): number[] {
  const C = x.length;
  const w = p[`${prefix}.weight`];
  if (cfg.family === 'gpt2') {
    let mean = 0;
    for (const v of x) mean += v / C;
    let variance = 0;
    for (const v of x) variance += ((v - mean) * (v - mean)) / C;
    const bias = p[`${prefix}.bias`];
    return x.map((v, c) => ((v - mean) / Math.sqrt(variance + cfg.normEps)) * w[c] + bias[c]);
  }
  let ms = 0;
  for (const v of x) ms += (v * v) / C;
  return x.map((v, c) => (v / Math.sqrt(ms + cfg.normEps)) * w[c]);
}

function ropeInPlace(cfg: ModelConfig, vec: number[], heads: number, pos: number): void {
  const D = cfg.headDim;
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < D / 2; i++) {
      const theta = pos / cfg.ropeTheta! ** ((2 * i) / D);
      const a = vec[h * D + i];
      const b = vec[h * D + i + D / 2];
      vec[h * D + i] = a * Math.cos(theta) - b * Math.sin(theta);
      vec[h * D + i + D / 2] = b * Math.cos(theta) + a * Math.sin(theta);
    }
  }
}

/** Logits [T][V] (and values [T]) of one sequence. */
export function loopForward(cfg: ModelConfig, p: P, tokens: readonly number[], opts: LoopOptions = {}): { logits: number[][]; values: number[] } {
  if (cfg.family !== 'gpt2' && cfg.family !== 'llama') throw new Error(`the loop reference covers gpt2 and llama, not ${cfg.family}`);
  const { dModel: C, nHead: Hq, nKvHead: Hkv, headDim: D, vocabSize: V } = cfg;
  const T = tokens.length;
  const start = opts.start ?? 0;
  const emb = p['tok_emb.weight'];
  let xs: number[][] = tokens.map((tok, t) => {
    const row: number[] = [];
    for (let c = 0; c < C; c++) row.push(emb[tok * C + c] + (cfg.family === 'gpt2' ? p['pos_emb.weight'][(start + t) * C + c] : 0));
    return row;
  });
  for (let l = 0; l < cfg.nLayer; l++) {
    const qs: number[][] = [];
    const ks: number[][] = [];
    const vs: number[][] = [];
    for (let t = 0; t < T; t++) {
      const h = normalize(cfg, p, `layers.${l}.attn_norm`, xs[t]);
      const q = lin(p, `layers.${l}.attn.q`, h, opts);
      const k = lin(p, `layers.${l}.attn.k`, h, opts);
      if (cfg.family === 'llama') {
        ropeInPlace(cfg, q, Hq, start + t);
        ropeInPlace(cfg, k, Hkv, start + t);
      }
      qs.push(q);
      ks.push(k);
      vs.push(lin(p, `layers.${l}.attn.v`, h, opts));
    }
    const next: number[][] = [];
    for (let t = 0; t < T; t++) {
      const att = new Array<number>(Hq * D).fill(0);
      for (let h = 0; h < Hq; h++) {
        const kv = Math.floor(h / (Hq / Hkv));
        const scores: number[] = [];
        for (let j = 0; j <= t; j++) {
          let s = 0;
          for (let d = 0; d < D; d++) s += qs[t][h * D + d] * ks[j][kv * D + d];
          scores.push(s / Math.sqrt(D));
        }
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= t; j++) for (let d = 0; d < D; d++) att[h * D + d] += (e[j] / z) * vs[j][kv * D + d];
      }
      const o = lin(p, `layers.${l}.attn.o`, att, opts);
      const x1 = xs[t].map((v, c) => v + o[c]);
      const h2 = normalize(cfg, p, `layers.${l}.mlp_norm`, x1);
      let act: number[];
      if (cfg.family === 'gpt2') {
        act = lin(p, `layers.${l}.mlp.up`, h2, opts).map((u) => 0.5 * u * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (u + 0.044715 * u ** 3))));
      } else {
        const g = lin(p, `layers.${l}.mlp.gate`, h2, opts);
        const u = lin(p, `layers.${l}.mlp.up`, h2, opts);
        act = g.map((gv, f) => (gv / (1 + Math.exp(-gv))) * u[f]);
      }
      const down = lin(p, `layers.${l}.mlp.down`, act, opts);
      next.push(x1.map((v, c) => v + down[c]));
    }
    xs = next;
  }
  const head = cfg.tieEmbeddings ? emb : p['lm_head.weight'];
  const logits: number[][] = [];
  const values: number[] = [];
  for (let t = 0; t < T; t++) {
    const h = normalize(cfg, p, 'final_norm', xs[t]);
    const row: number[] = [];
    for (let v = 0; v < V; v++) {
      let s = 0;
      for (let c = 0; c < C; c++) s += head[v * C + c] * h[c];
      row.push(s);
    }
    logits.push(row);
    if (opts.valueHead) {
      let s = p['value_head.bias'][0];
      for (let c = 0; c < C; c++) s += p['value_head.weight'][c] * h[c];
      values.push(s);
    }
  }
  return { logits, values };
}

/** Σ over (row, t) with mask of −log softmax(logits)[target], divided by Σ mask — rows run separately. */
export function loopLoss(cfg: ModelConfig, p: P, rows: { tokens: number[]; targets: number[]; mask: number[] }[], opts: LoopOptions = {}): number {
  let total = 0;
  let count = 0;
  for (const r of rows) {
    const { logits } = loopForward(cfg, p, r.tokens, opts);
    logits.forEach((row, t) => {
      if (r.mask[t] === 0) return;
      const m = Math.max(...row);
      const lse = m + Math.log(row.reduce((s, v) => s + Math.exp(v - m), 0));
      total += r.mask[t] * (lse - row[r.targets[t]]);
      count += r.mask[t];
    });
  }
  return count === 0 ? 0 : total / count;
}
