/**
 * Peer: @jax-js/jax on its webgpu backend — each kernel's best equivalent composed from jax-js
 * numpy ops, the forward and the backward (`vjp` with the upstream gradient, or `valueAndGrad`
 * for a scalar loss) traced together under one `jit`, so jax-js fuses what it can.
 *
 * jax-js arrays are reference-counted with move semantics: passing an array to a function
 * consumes it, so inputs that live across iterations are passed as `x.ref`, and values used twice
 * inside a traced function are taken with `.ref` as well.
 * Completion: `blockUntilReady()` on every output (dispatches pending work, then waits for a
 * zero-byte read, so nothing is copied back). Peak bytes: jax-js exposes no memory statistics (no
 * public allocator counters), so its peak-bytes column is null.
 */
import { type Array as JArray, defaultDevice, getWebGPUDevice, init, jit, nn, numpy as np, valueAndGrad, vjp } from '@jax-js/jax';
import { type BenchCase, causalBias, type Inputs, OUTPUT_NAMES, type Outputs } from '../cases.ts';
import { type Impl, type Prepared, watchErrors } from '../impl.ts';

/** One iteration: a jitted function applied to (refs of) the held inputs. */
type Step = () => JArray[];

function build(c: BenchCase, inp: Inputs): { step: Step; held: JArray[]; release: () => void } {
  const f32 = (name: string, shape: number[]) => np.array(inp[name] as Float32Array<ArrayBuffer>).reshape(shape);
  switch (c.name) {
    case 'matmul': {
      const { M, K, N } = c.dims;
      const a = f32('a', [M, K]);
      const b = f32('b', [K, N]);
      const f = jit((x: JArray, y: JArray) => np.matmul(x, y));
      return { held: [a, b], step: () => [f(a.ref, b.ref)], release: () => f.dispose() };
    }
    case 'lora_linear_fwd_bwd': {
      const { N, Cin, Cout, R, alpha } = c.dims;
      const s = alpha / R;
      const x = f32('x', [N, Cin]);
      const w = f32('w', [Cout, Cin]);
      const a = f32('a', [R, Cin]);
      const b = f32('b', [Cout, R]);
      const dy = f32('dy', [N, Cout]);
      const f = jit((xx: JArray, ww: JArray, aa: JArray, bb: JArray, g: JArray) => {
        // y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ, differentiated in x, A, B only (W frozen: no dW).
        const lin = (x1: JArray, a1: JArray, b1: JArray) =>
          np.add(np.matmul(x1.ref, np.transpose(ww)), np.matmul(np.matmul(x1, np.transpose(a1)), np.transpose(b1)).mul(s));
        const [y, back] = vjp(lin, [xx, aa, bb]);
        const [dx, da, db] = back(g);
        return [y, dx, da, db];
      });
      return {
        held: [x, w, a, b, dy],
        step: () => f(x.ref, w.ref, a.ref, b.ref, dy.ref),
        release: () => f.dispose(),
      };
    }
    case 'attention_fwd_bwd': {
      const { B, T, H, D } = c.dims;
      const q = f32('q', [B, T, H, D]);
      const k = f32('k', [B, T, H, D]);
      const v = f32('v', [B, T, H, D]);
      const dout = f32('dout', [B, T, H, D]);
      const bias = np.array(causalBias(T) as Float32Array<ArrayBuffer>).reshape([T, T]);
      const scale = 1 / Math.sqrt(D);
      const f = jit((qq: JArray, kk: JArray, vv: JArray, mask: JArray, g: JArray) => {
        const heads = (x: JArray) => np.transpose(x, [0, 2, 1, 3]); // [B,T,H,D] -> [B,H,T,D]
        const attn = (q1: JArray, k1: JArray, v1: JArray) => {
          const s1 = np.matmul(heads(q1), np.transpose(k1, [0, 2, 3, 1])).mul(scale).add(mask); // [B,H,T,T]
          return np.transpose(np.matmul(nn.softmax(s1, -1), heads(v1)), [0, 2, 1, 3]);
        };
        const [out, back] = vjp(attn, [qq, kk, vv]);
        const [dq, dk, dv] = back(g);
        return [out, dq, dk, dv];
      });
      return {
        held: [q, k, v, dout, bias],
        step: () => f(q.ref, k.ref, v.ref, bias.ref, dout.ref),
        release: () => f.dispose(),
      };
    }
    case 'policy_loss_fwd_bwd': {
      const { N, V, eps } = c.dims;
      const logits = f32('logits', [N, V]);
      const targets = np.array(inp.targets as Int32Array<ArrayBuffer>, { dtype: np.int32 });
      const oldLogp = f32('oldLogprobs', [N]);
      const adv = f32('advantages', [N]);
      // PPO clipped surrogate, token mean: −mean(min(r·A, clip(r, 1−ε, 1+ε)·A)), r = exp(logp − old).
      const loss = (lg: JArray, tg: JArray, old: JArray, ad: JArray) => {
        // The target's log-prob as a masked row sum, mask = (iota == target): jax-js cannot jit
        // takeAlongAxis's gradient (a scatter), and its nn.oneHot slices eye(V), a V×V buffer that
        // breaks the binding limit at V = 32768 (silently: garbage out). The comparison fuses.
        const hit = np.equal(np.arange(0, V, 1, { dtype: np.int32 }).reshape([1, V]), tg.reshape([N, 1]));
        const logp = np.sum(np.where(hit, nn.logSoftmax(lg, -1), 0), -1);
        const ratio = np.exp(logp.sub(old));
        const surr = np.minimum(ratio.ref.mul(ad.ref), np.clip(ratio, 1 - eps, 1 + eps).mul(ad));
        return np.mean(surr).mul(-1);
      };
      const f = jit((lg: JArray, tg: JArray, old: JArray, ad: JArray) => {
        const [value, grad] = valueAndGrad(loss)(lg, tg, old, ad);
        return [value, grad];
      });
      return {
        held: [logits, targets, oldLogp, adv],
        step: () => f(logits.ref, targets.ref, oldLogp.ref, adv.ref),
        release: () => f.dispose(),
      };
    }
  }
}

export class JaxPeer implements Impl {
  readonly name = 'jax' as const;
  #errors: { check(): void } | null = null;

  async init(): Promise<void> {
    const got = await init('webgpu');
    if (!got.includes('webgpu')) throw new Error(`jax-js: the webgpu backend is not available here (got: ${got.join(', ') || 'none'})`);
    defaultDevice('webgpu');
    this.#errors = watchErrors(getWebGPUDevice(), 'jax-js');
  }

  missing(): string | null {
    return null;
  }

  prepare(c: BenchCase, inputs: Inputs): Promise<Prepared> {
    const { step, held, release } = build(c, inputs);
    const names = OUTPUT_NAMES[c.name];
    const errors = this.#errors!;
    return Promise.resolve({
      async run(iterations = 1) {
        const outs: JArray[] = [];
        for (let i = 0; i < iterations; i++) outs.push(...step());
        await Promise.all(outs.map((o) => o.blockUntilReady()));
        for (const o of outs) o.dispose();
        errors.check();
      },
      async outputs(): Promise<Outputs> {
        const outs = step();
        // data() consumes the array.
        const data = await Promise.all(outs.map((o) => o.data()));
        errors.check();
        return Object.fromEntries(names.map((n, i) => [n, Float32Array.from(data[i] as Float32Array)]));
      },
      peakBytes() {
        return Promise.resolve(null);
      },
      dispose() {
        for (const h of held) h.dispose();
        release();
      },
    });
  }
}
