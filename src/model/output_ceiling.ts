/**
 * How sure can an adapter make a model of a token at all? An adapter on the blocks (LoRA on q, k, v,
 * o, gate, up, down) leaves the output head and the final norm as they are, so it reaches the logits
 * only through the final norm's output y = (w + offset) ⊙ u (+ b), where u = norm(h) has length √C
 * (LayerNorm: also mean 0), whatever the blocks compute. For a set of tokens — a game's symbols, say —
 * token a's probability against the others of the set is therefore at most
 *
 *   max over u of softmax_a(W_S · y(u)),
 *
 * W_S the set's rows of the output head (the token embedding when tied). When those rows lie close
 * together — a model trained from scratch barely moves the rows of letters its data rarely shows
 * from where they were initialised — that maximum is far below 1, and no amount of training such
 * an adapter makes the policy surer than it.
 *
 * The maximum is taken over the ball |u| ≤ √C (intersected with mean 0 for LayerNorm), a convex set
 * holding every vector the norm can output: log-softmax is concave in u there, so projected gradient
 * ascent reaches the maximum, and the value is an upper bound on what an adapter can reach
 * (the norm's ε, which shortens u a little, only lowers it).
 */
import { ShapeError } from '../errors.ts';
import { archOf } from './arch.ts';
import type { ModelConfig } from './config.ts';

export interface OutputCeilingOptions {
  /** Gradient-ascent iterations per token (default 2000). */
  readonly iterations?: number;
}

/**
 * For each token of `ids`, the highest probability it can take against the other tokens of `ids`
 * under any final hidden state (see the header). `params`: the model's host parameters by
 * canonical name (tok_emb.weight or lm_head.weight, final_norm.weight, final_norm.bias).
 */
export function outputCeiling(params: Readonly<Record<string, Float32Array>>, cfg: ModelConfig, ids: readonly number[], options: OutputCeilingOptions = {}): number[] {
  const C = cfg.dModel, V = cfg.vocabSize;
  const arch = archOf(cfg);
  const headName = cfg.tieEmbeddings ? 'tok_emb.weight' : 'lm_head.weight';
  const head = params[headName];
  const w = params['final_norm.weight'];
  const b = arch.norm === 'layernorm' ? params['final_norm.bias'] : undefined;
  if (!head || head.length !== V * C) throw new ShapeError('outputCeiling', `${headName} must be [${V}, ${C}], got ${head ? head.length : 'none'} values`);
  if (!w || w.length !== C) throw new ShapeError('outputCeiling', `final_norm.weight must be [${C}], got ${w ? w.length : 'none'} values`);
  if (arch.norm === 'layernorm' && (!b || b.length !== C)) throw new ShapeError('outputCeiling', `final_norm.bias must be [${C}], got ${b ? b.length : 'none'} values`);
  if (ids.length < 2) throw new RangeError(`outputCeiling: ids needs at least 2 tokens to compare, got ${ids.length}`);
  if (new Set(ids).size !== ids.length || ids.some((id) => !Number.isInteger(id) || id < 0 || id >= V)) {
    throw new RangeError(`outputCeiling: ids must be distinct token ids in [0, ${V}), got [${ids.join(', ')}]`);
  }
  const iterations = options.iterations ?? 2000;
  if (!Number.isInteger(iterations) || iterations < 1) throw new RangeError(`outputCeiling: iterations must be a positive integer, got ${iterations}`);

  const n = ids.length;
  const gain = Float64Array.from(w, (x) => x + arch.normOffset);
  const rows = ids.map((id) => Float64Array.from(head.subarray(id * C, (id + 1) * C)));
  // In u the logits are A·u + c: A[s] = W_s ⊙ gain, c[s] = W_s · bias.
  const A = rows.map((r) => r.map((x, i) => x * gain[i]));
  const c = rows.map((r) => (b ? r.reduce((sum, x, i) => sum + x * b[i], 0) : 0));
  const radius = Math.sqrt(C);
  const centered = arch.norm === 'layernorm';
  // The feasible set: the ball of radius √C (LayerNorm: within the mean-0 hyperplane through its centre,
  // so projecting onto the hyperplane and then onto the ball is the projection onto both).
  const project = (u: Float64Array) => {
    if (centered) {
      const mean = u.reduce((s, x) => s + x, 0) / C;
      for (let i = 0; i < C; i++) u[i] -= mean;
    }
    const len = Math.hypot(...u);
    if (len > radius) for (let i = 0; i < C; i++) u[i] *= radius / len;
  };
  // Step 1/L: log-softmax's Hessian in u is −Cov_P(A), whose norm is at most max_s |A_s|².
  const L = Math.max(...A.map((r) => r.reduce((s, x) => s + x * x, 0)), 1e-12);
  const probs = (u: Float64Array) => {
    const z = A.map((r, s) => r.reduce((sum, x, i) => sum + x * u[i], c[s]));
    const m = Math.max(...z);
    const e = z.map((x) => Math.exp(x - m));
    const total = e.reduce((s, x) => s + x, 0);
    return e.map((x) => x / total);
  };
  return ids.map((_, a) => {
    // Start from the direction that separates a from the others' mean.
    const u = new Float64Array(C);
    for (let i = 0; i < C; i++) u[i] = A[a][i] - A.reduce((s, r, k) => (k === a ? s : s + r[i]), 0) / (n - 1);
    project(u);
    let p = probs(u);
    for (let it = 0; it < iterations; it++) {
      // ∇_u log P_a = A_a − Σ_s P_s A_s
      for (let i = 0; i < C; i++) {
        let g = A[a][i];
        for (let s = 0; s < n; s++) g -= p[s] * A[s][i];
        u[i] += g / L;
      }
      project(u);
      p = probs(u);
    }
    return p[a];
  });
}
