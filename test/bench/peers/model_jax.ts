/**
 * Peer in the `model` part: GPT-2 written with jax-js numpy ops on its webgpu backend, the way a
 * jax user would write it — a pure forward over a parameter pytree (canonical names), the
 * token-mean cross-entropy, `valueAndGrad`, and one `jit` around the whole step (forward,
 * backward, ‖g‖₂ and the Adam update, bias corrections folded into lr and ε), so jax-js fuses
 * what it can. A LoRA job differentiates the adapter pytree only (argnums 0); the base is a
 * second, non-differentiated argument.
 *
 * Where it departs from the textbook, for jax-js 0.1.25:
 *   - token embedding: a gather (`take`) where no gradient flows through it (LoRA, decoding); in
 *     a full job a one-hot [N, V] matmul, because jax-js cannot jit the gather's gradient (a
 *     scatter). The target log-prob is a masked row sum, mask = (iota == target), for the same reason;
 *   - decoding: a KV cache of fixed length P + n per layer ([B, H, Tmax, D]), written at the step's
 *     position with `where(iota == pos, new, cache)` (jax-js has no dynamic_update_slice), one
 *     jitted prefill over the prompt (caches padded to Tmax) and one jitted decode step reused
 *     for every position; the argmax ids are read back each step to feed the next.
 * Only the GPT-2 family is written here (the bench's sizes are GPT-2's).
 *
 * jax-js arrays move: passing an array consumes it, so anything used twice is taken with `.ref`.
 */
import { type Array as JArray, jit, nn, numpy as np, tree, valueAndGrad } from '@jax-js/jax';
import type { LoraConfig, ModelConfig } from '../../../src/model/config.ts';
import { loraScale } from '../../../src/model/config.ts';
import { loraSpecs, moduleName, parameterSpecs } from '../../../src/model/params.ts';
import type { Decoder, DecodeSetup, ModelImpl, StepCheck, TrainJob, TrainSetup } from '../model_impl.ts';

type Params = Record<string, JArray>;

const f32 = (a: Float32Array, shape: readonly number[]) => np.array(a as Float32Array<ArrayBuffer>).reshape([...shape]);
const i32 = (a: Int32Array) => np.array(a as Int32Array<ArrayBuffer>, { dtype: np.int32 });

function uploadParams(cfg: ModelConfig, host: Readonly<Record<string, Float32Array>>, shapes: Map<string, readonly number[]>): Params {
  const out: Params = {};
  for (const [name, shape] of shapes) {
    if (!host[name]) throw new Error(`jax model: parameter ${name} is missing`);
    out[name] = f32(host[name], shape);
  }
  return out;
}

/** Layer norm over the last axis; consumes x, w, b. */
function layerNorm(x: JArray, w: JArray, b: JArray, eps: number): JArray {
  const mean = np.mean(x.ref, -1, { keepdims: true });
  const xc = x.sub(mean);
  const variance = np.mean(np.square(xc.ref), -1, { keepdims: true });
  return xc.div(np.sqrt(variance.add(eps))).mul(w).add(b);
}

/** gelu, tanh approximation (as GPT-2 and the engine); consumes x. */
function geluTanh(x: JArray): JArray {
  const c = Math.sqrt(2 / Math.PI);
  const inner = x.ref.add(np.power(x.ref, 3).mul(0.044715)).mul(c);
  return x.mul(0.5).mul(np.tanh(inner).add(1));
}

interface Lora {
  readonly p: Params;
  readonly cfg: LoraConfig;
}

/** y = x·Wᵀ + b (+ s·(x·Aᵀ)·Bᵀ on a LoRA target); consumes x and the module's tensors. */
function linear(x: JArray, p: Params, module: string, lora: Lora | null, target: string): JArray {
  const onLora = lora !== null && (lora.cfg.targets as readonly string[]).includes(target);
  const y = np.matmul(onLora ? x.ref : x, np.transpose(p[`${module}.weight`])).add(p[`${module}.bias`]);
  if (!onLora) return y;
  const xa = np.matmul(x, np.transpose(lora.p[`${module}.lora_a`]));
  return y.add(np.matmul(xa, np.transpose(lora.p[`${module}.lora_b`])).mul(loraScale(lora.cfg)));
}

/** Causal attention with an additive bias [Tq, Tk]: q [B, Tq, C], k and v [B, Tk, C] → [B, Tq, C]. */
function attend(cfg: ModelConfig, q: JArray, k: JArray, v: JArray, bias: JArray): JArray {
  const { nHead: H, headDim: D } = cfg;
  const [B, Tq] = q.shape;
  const Tk = k.shape[1];
  const qh = np.transpose(q.reshape([B, Tq, H, D]), [0, 2, 1, 3]);
  const kt = np.transpose(k.reshape([B, Tk, H, D]), [0, 2, 3, 1]);
  const vh = np.transpose(v.reshape([B, Tk, H, D]), [0, 2, 1, 3]);
  const s = np.matmul(qh, kt).mul(1 / Math.sqrt(D)).add(bias);
  return np.transpose(np.matmul(nn.softmax(s, -1), vh), [0, 2, 1, 3]).reshape([B, Tq, H * D]);
}

/** [T, T]: 0 where key j ≤ query t, else −1e30. */
function causalBias(T: number): JArray {
  const bias = new Float32Array(T * T);
  for (let t = 0; t < T; t++) for (let j = t + 1; j < T; j++) bias[t * T + j] = -1e30;
  return f32(bias, [T, T]);
}

/** One block on x [B, T, C] given the attention (which receives q, k, v [B, T, C]); consumes x. */
function block(cfg: ModelConfig, x: JArray, p: Params, lora: Lora | null, i: number, attn: (q: JArray, k: JArray, v: JArray) => JArray): JArray {
  const lin = (h: JArray, t: string) => linear(h, p, moduleName(i, t as 'q'), lora, t);
  const h = layerNorm(x.ref, p[`layers.${i}.attn_norm.weight`], p[`layers.${i}.attn_norm.bias`], cfg.normEps);
  const a = attn(lin(h.ref, 'q'), lin(h.ref, 'k'), lin(h, 'v'));
  const x2 = x.add(lin(a, 'o'));
  const h2 = layerNorm(x2.ref, p[`layers.${i}.mlp_norm.weight`], p[`layers.${i}.mlp_norm.bias`], cfg.normEps);
  return x2.add(lin(geluTanh(lin(h2, 'up')), 'down'));
}

/**
 * Token-mean cross-entropy of GPT-2 on tokens [B, T] against targets [B·T]; consumes everything.
 * `oneHotEmbedding`: look the tokens up by a one-hot matmul (differentiable under jit).
 */
function gpt2Loss(cfg: ModelConfig, p: Params, lora: Lora | null, tokens: JArray, targets: JArray, bias: JArray, oneHotEmbedding: boolean): JArray {
  const [B, T] = tokens.shape;
  const { vocabSize: V, dModel: C } = cfg;
  const N = B * T;
  const iota = () => np.arange(0, V, 1, { dtype: np.int32 }).reshape([1, V]);
  const emb = p['tok_emb.weight'];
  const tok = oneHotEmbedding
    ? np.matmul(np.equal(iota(), tokens.reshape([N, 1])).astype(np.float32), emb.ref)
    : np.take(emb.ref, tokens.reshape([N]), 0);
  let x = tok.reshape([B, T, C]).add(p['pos_emb.weight'].slice([0, T], []));
  for (let i = 0; i < cfg.nLayer; i++) x = block(cfg, x, p, lora, i, (q, k, v) => attend(cfg, q, k, v, bias.ref));
  bias.dispose();
  const hf = layerNorm(x, p['final_norm.weight'], p['final_norm.bias'], cfg.normEps).reshape([N, C]);
  const logp = nn.logSoftmax(np.matmul(hf, np.transpose(emb)), -1);
  const hit = np.equal(iota(), targets.reshape([N, 1]));
  return np.mean(np.sum(np.where(hit, logp, 0), -1)).mul(-1);
}

/** Σ ‖g‖² over a gradient pytree, square-rooted; consumes it. */
function globalNorm(g: Params): JArray {
  let sq: JArray | null = null;
  for (const t of Object.values(g)) {
    const s = np.sum(np.square(t));
    sq = sq === null ? s : sq.add(s);
  }
  return np.sqrt(sq!);
}

/** Adam on every tensor of `p` (bias corrections folded into lrT and epsT); consumes p, m, v, g. */
function adam(p: Params, m: Params, v: Params, g: Params, b1: number, b2: number, lrT: JArray, epsT: JArray): [Params, Params, Params] {
  const np2: Params = {};
  const nm: Params = {};
  const nv: Params = {};
  for (const k of Object.keys(p)) {
    const mk = m[k].mul(b1).add(g[k].ref.mul(1 - b1));
    const vk = v[k].mul(b2).add(np.square(g[k]).mul(1 - b2));
    np2[k] = p[k].sub(mk.ref.div(np.sqrt(vk.ref).add(epsT.ref)).mul(lrT.ref));
    nm[k] = mk;
    nv[k] = vk;
  }
  lrT.dispose();
  epsT.dispose();
  return [np2, nm, nv];
}

const zerosLike = (p: Params): Params => Object.fromEntries(Object.entries(p).map(([k, t]) => [k, np.zeros(t.shape)]));

export class JaxModel implements ModelImpl {
  readonly name = 'jax' as const;

  missingTrain(s: TrainSetup): string | null {
    return s.cfg.family === 'gpt2' ? null : 'only GPT-2 is written with jax-js here';
  }

  train(s: TrainSetup): Promise<TrainJob> {
    const { cfg, adam: o } = s;
    const base = uploadParams(cfg, s.params, new Map(parameterSpecs(cfg).map((p) => [p.name, p.shape])));
    const tokens = i32(s.inputsBT).reshape([s.B, s.T]);
    const targets = i32(s.targetsBT);
    const bias = causalBias(s.T);
    const lcfg = s.lora?.config ?? null;
    let trained: Params = lcfg ? uploadParams(cfg, s.lora!.tensors, new Map(loraSpecs(cfg, lcfg).map((p) => [p.name, p.shape]))) : base;
    let m = zerosLike(trained);
    let v = zerosLike(trained);
    const lossOf = lcfg
      ? (l: Params, b: Params, tk: JArray, tg: JArray, bi: JArray) => gpt2Loss(cfg, b, { p: l, cfg: lcfg }, tk, tg, bi, false)
      : (pp: Params, _b: Params, tk: JArray, tg: JArray, bi: JArray) => gpt2Loss(cfg, pp, null, tk, tg, bi, true);
    const step = jit((pp: Params, mm: Params, vv: Params, b: Params, tk: JArray, tg: JArray, bi: JArray, lrT: JArray, epsT: JArray) => {
      const [loss, g] = valueAndGrad(lossOf)(tree.ref(pp), b, tk, tg, bi);
      const norm = globalNorm(tree.ref(g));
      const [p2, m2, v2] = adam(pp, mm, vv, g, o.beta1, o.beta2, lrT, epsT);
      return [loss, norm, p2, m2, v2];
    });
    let t = 0;
    const once = (): [JArray, JArray, Params, Params, Params] => {
      t++;
      const lrT = np.array([o.lr * Math.sqrt(1 - o.beta2 ** t) / (1 - o.beta1 ** t)]);
      const epsT = np.array([o.eps * Math.sqrt(1 - o.beta2 ** t)]);
      // A LoRA job passes the base as refs (kept); a full job's trained tensors are the base.
      const [loss, norm, p2, m2, v2] = step(trained, m, v, lcfg ? tree.ref(base) : {}, tokens.ref, targets.ref, bias.ref, lrT, epsT) as [JArray, JArray, Params, Params, Params];
      trained = p2;
      m = m2;
      v = v2;
      return [loss, norm, p2, m2, v2];
    };
    return Promise.resolve({
      async run() {
        const [loss, norm, p2, m2, v2] = once();
        await Promise.all([loss, norm, ...Object.values(p2), ...Object.values(m2), ...Object.values(v2)].map((a) => a.blockUntilReady()));
        loss.dispose();
        norm.dispose();
      },
      async checked(): Promise<StepCheck> {
        const [loss, norm, p2] = once();
        await Promise.all(Object.values(p2).map((a) => a.blockUntilReady()));
        const [l, g] = await Promise.all([loss.data(), norm.data()]);
        return { loss: l[0], gradNorm: g[0] };
      },
      firstStepPeakBytes: null,
      dispose() {
        tree.dispose([trained, m, v, tokens, targets, bias]);
        if (lcfg) tree.dispose(base);
        step.dispose();
      },
    });
  }

  decoder(s: DecodeSetup): Promise<Decoder> {
    const { cfg } = s;
    if (cfg.family !== 'gpt2') return Promise.reject(new Error('jax model: only GPT-2 is written with jax-js here'));
    const { nHead: H, headDim: D, dModel: C, nLayer: L } = cfg;
    const B = s.prompts.length;
    const P = s.prompts[0].length;
    const Tmax = P + s.newTokens;
    const p = uploadParams(cfg, s.params, new Map(parameterSpecs(cfg).map((q) => [q.name, q.shape])));
    const heads = (x: JArray, T: number) => np.transpose(x.reshape([B, T, H, D]), [0, 2, 1, 3]); // [B, H, T, D]
    const merge = (x: JArray, T: number) => np.transpose(x, [0, 2, 1, 3]).reshape([B, T, C]);
    const head = (pp: Params, x: JArray) => {
      const hf = layerNorm(x, pp['final_norm.weight'], pp['final_norm.bias'], cfg.normEps);
      return np.argmax(np.matmul(hf, np.transpose(pp['tok_emb.weight'])), -1).astype(np.int32); // [B]
    };
    // Prefill: the prompt's forward; K and V of every layer padded to Tmax; the first new ids.
    const prefill = jit((pp: Params, tk: JArray, bias: JArray) => {
      const kv: JArray[] = [];
      let x = np.take(pp['tok_emb.weight'].ref, tk.reshape([B * P]), 0).reshape([B, P, C]).add(pp['pos_emb.weight'].slice([0, P], []));
      for (let i = 0; i < L; i++) {
        x = block(cfg, x, pp, null, i, (q, k, v) => {
          kv.push(np.pad(heads(k.ref, P), [[0, 0], [0, 0], [0, Tmax - P], [0, 0]]), np.pad(heads(v.ref, P), [[0, 0], [0, 0], [0, Tmax - P], [0, 0]]));
          return attend(cfg, q, k, v, bias.ref);
        });
      }
      bias.dispose();
      return [head(pp, x.slice([], P - 1, [])), kv];
    });
    // One decode step at position `pos` [1] for ids [B]: caches written there, attention over ≤ pos.
    const stepFn = jit((pp: Params, ids: JArray, pos: JArray, kv: JArray[]) => {
      const at = np.equal(np.arange(0, Tmax, 1, { dtype: np.int32 }), pos.ref); // [Tmax]
      const bias = np.where(np.arange(0, Tmax, 1, { dtype: np.int32 }).lessEqual(pos.ref), 0, -1e30).reshape([1, 1, 1, Tmax]);
      const posEmb = np.take(pp['pos_emb.weight'], pos, 0); // [1, C]
      let x = np.take(pp['tok_emb.weight'].ref, ids, 0).add(posEmb).reshape([B, 1, C]);
      const out: JArray[] = [];
      const sel = at.reshape([1, 1, Tmax, 1]);
      for (let i = 0; i < L; i++) {
        x = block(cfg, x, pp, null, i, (q, k, v) => {
          const kc = np.where(sel.ref, heads(k, 1), kv[2 * i]);
          const vc = np.where(sel.ref, heads(v, 1), kv[2 * i + 1]);
          const sc = np.matmul(heads(q, 1), np.transpose(kc.ref, [0, 1, 3, 2])).mul(1 / Math.sqrt(D)).add(bias.ref);
          const a = np.matmul(nn.softmax(sc, -1), vc.ref); // [B, H, 1, D]
          out.push(kc, vc);
          return merge(a, 1);
        });
      }
      sel.dispose();
      bias.dispose();
      return [head(pp, x.reshape([B, C])), out];
    });
    const promptIds = Int32Array.from(s.prompts.flat());
    return Promise.resolve({
      how: `KV cache of ${Tmax} positions per layer written with where(iota == pos), jitted prefill and decode step`,
      async generate() {
        const rows: number[][] = s.prompts.map(() => []);
        let [ids, kv] = prefill(tree.ref(p), i32(promptIds).reshape([B, P]), causalBias(P)) as [JArray, JArray[]];
        for (let k = 0; ; k++) {
          const host = await ids.ref.data();
          rows.forEach((r, b) => r.push(host[b]));
          if (k + 1 === s.newTokens) break;
          [ids, kv] = stepFn(tree.ref(p), ids, np.array([P + k], { dtype: np.int32 }), kv) as [JArray, JArray[]];
        }
        ids.dispose();
        tree.dispose(kv);
        return rows;
      },
      dispose() {
        tree.dispose(p);
        prefill.dispose();
        stepFn.dispose();
      },
    });
  }
}
