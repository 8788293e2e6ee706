/**
 * vocabMask — sets the logits of disallowed vocabulary columns to −Inf in place, before the
 * sampler (host wrapper of kernels/vocab_mask.wgsl). It is a separate op rather than an option of
 * `sample` so the sampler's kernel stays as it is: the sampler already gives −Inf entries
 * probability 0 and never draws them while one finite logit remains.
 *
 * The mask is a bitmask u32 [⌈V/32⌉] (bit j mod 32 of word ⌊j/32⌋: column j allowed), built on the
 * host once per generation by `vocabBitmask` from a limit (ids ≥ limit masked: the embedding rows
 * a tokenizer has no id for), a list of further masked ids (ids the tokenizer reserves but
 * never trained, or holes in its id range) and, when a request may say only a few things, the
 * list of ids it may sample (every other id masked).
 */
import { ConfigError } from '../errors.ts';
import { expectBindable, expectDtype, rowsCols } from '../gpu/checks.ts';
import { grid1d, type Recorder } from '../gpu/recorder.ts';
import type { Tensor } from '../gpu/tensor.ts';

const KERNEL = 'vocab_mask';
const WG = 256;

/** Which ids may be sampled: those below `limit` except `masked`. */
export interface VocabMask {
  /** Ids ≥ limit are masked (the tokenizer's vocabSize; above the model's vocabulary it changes nothing). */
  readonly limit: number;
  /** Further masked ids (unused/reserved ids, holes); those past the model's vocabulary are ignored. */
  readonly masked?: readonly number[];
  /** When given, only these ids may be sampled (still below `limit` and not `masked`): a restricted action vocabulary. */
  readonly allowed?: readonly number[];
}

/** The bitmask for a vocabulary of V columns; throws ConfigError naming `field` on bad input. */
export function vocabBitmask(mask: VocabMask, V: number, field = 'vocabMask'): Uint32Array {
  if (!Number.isInteger(mask.limit) || mask.limit < 1) throw new ConfigError(`${field}.limit`, `must be a positive integer, got ${mask.limit}`);
  // A tokenizer may also have more ids than the model has rows (Gemma 3: 262145 ids, 262144
  // rows): the model cannot produce those anyway.
  const limit = Math.min(mask.limit, V);
  const bits = new Uint32Array(Math.ceil(V / 32));
  for (let w = 0; w < Math.floor(limit / 32); w++) bits[w] = 0xffffffff;
  for (let j = Math.floor(limit / 32) * 32; j < limit; j++) bits[j >>> 5] |= 1 << (j & 31);
  for (const id of mask.masked ?? []) {
    if (!Number.isInteger(id) || id < 0) throw new ConfigError(`${field}.masked`, `${id} is not a token id`);
    if (id < V) bits[id >>> 5] &= ~(1 << (id & 31));
  }
  if (mask.allowed !== undefined) {
    const only = new Uint32Array(bits.length);
    for (const id of mask.allowed) {
      if (!Number.isInteger(id) || id < 0 || id >= V) throw new ConfigError(`${field}.allowed`, `${id} is not a token id in [0, ${V})`);
      only[id >>> 5] |= 1 << (id & 31);
    }
    for (let w = 0; w < bits.length; w++) bits[w] &= only[w];
  }
  let any = false;
  for (const w of bits) any ||= w !== 0;
  if (!any) throw new ConfigError(field, 'masks every id: nothing could be sampled');
  return bits;
}

/** Whether `id` is allowed by a bitmask from `vocabBitmask`. */
export function allowedBy(bits: Uint32Array, id: number): boolean {
  return ((bits[id >>> 5] >>> (id & 31)) & 1) === 1;
}

/** logits [B, V] f32: columns whose bit in `allowed` u32 [⌈V/32⌉] is 0 become −Inf (in place). */
export function vocabMask(rec: Recorder, logits: Tensor, allowed: Tensor): void {
  const op = KERNEL;
  expectDtype(op, 'logits', logits, 'f32');
  expectDtype(op, 'allowed', allowed, 'u32');
  const [B, V] = rowsCols(op, 'logits', logits);
  if (allowed.size !== Math.ceil(V / 32)) throw new ConfigError(`${op}.allowed`, `has ${allowed.size} words; V = ${V} needs ${Math.ceil(V / 32)}`);
  expectBindable(op, rec.ctx, [['logits', logits], ['allowed', allowed]]);
  const n = B * V;
  if (n === 0) return;
  const { workgroups, rowThreads } = grid1d(rec.ctx, n, WG);
  rec.dispatch({ kernel: KERNEL, entryPoint: 'main', constants: { WG }, bindings: { logits, allowed }, params: { n, v: V, row_threads: rowThreads, neg_inf: 0xff800000 }, workgroups });
}
