/**
 * Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy
 * as 1, 2, 3", SC 2011).
 *
 * A generator's whole state is (key, counter): two u32 of key from the seed and stream, and a
 * 64-bit block counter. Any draw can be recomputed from its position, streams never overlap, and
 * the state is plain data that goes into a checkpoint and comes back bit for bit. The GPU sampler
 * uses the same function in WGSL, so host and device agree on a seed's numbers.
 */

const M0 = 0xd2511f53;
const M1 = 0xcd9e8d57;
const W0 = 0x9e3779b9;
const W1 = 0xbb67ae85;

/** High 32 bits of the 64-bit product of two u32, exactly (no BigInt); the low half is Math.imul. */
function mulhi(a: number, b: number): number {
  const al = a & 0xffff;
  const ah = a >>> 16;
  const bl = b & 0xffff;
  const bh = b >>> 16;
  const ll = al * bl;
  const lh = al * bh;
  const hl = ah * bl;
  const hh = ah * bh;
  const mid = (ll >>> 16) + (lh & 0xffff) + (hl & 0xffff);
  return (hh + (lh >>> 16) + (hl >>> 16) + (mid >>> 16)) >>> 0;
}

/**
 * Philox4x32-10 written into `out` (four u32). No allocation per block: a model's init draws
 * hundreds of millions of blocks (Qwen2.5-0.5B: ~250M), where a fresh array per call (and per
 * product) made initParameters take minutes.
 */
function philoxInto(out: Uint32Array, c0: number, c1: number, c2: number, c3: number, k0: number, k1: number): Uint32Array {
  let x0 = c0 >>> 0, x1 = c1 >>> 0, x2 = c2 >>> 0, x3 = c3 >>> 0;
  let key0 = k0 >>> 0, key1 = k1 >>> 0;
  for (let r = 0; r < 10; r++) {
    const hi0 = mulhi(M0, x0), lo0 = Math.imul(M0, x0) >>> 0;
    const hi1 = mulhi(M1, x2), lo1 = Math.imul(M1, x2) >>> 0;
    x0 = (hi1 ^ x1 ^ key0) >>> 0;
    x1 = lo1;
    x2 = (hi0 ^ x3 ^ key1) >>> 0;
    x3 = lo0;
    key0 = (key0 + W0) >>> 0;
    key1 = (key1 + W1) >>> 0;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
  return out;
}

/** Philox4x32 with 10 rounds: four u32 of output for a 128-bit counter and a 64-bit key. */
export function philox4x32(c0: number, c1: number, c2: number, c3: number, k0: number, k1: number): Uint32Array {
  return philoxInto(new Uint32Array(4), c0, c1, c2, c3, k0, k1);
}

/** Plain-data generator state, as stored in checkpoints. */
export interface RngState {
  seed: number;
  stream: number;
  /** Index of the next u32 to draw. */
  position: number;
}

/**
 * A stream of random numbers for one purpose (init, sampling, an environment, batch order).
 * `new Rng(seed, stream)`: different streams of one seed are independent.
 */
export class Rng {
  readonly seed: number;
  readonly stream: number;
  #position = 0;
  #block = new Uint32Array(4);
  #blockIndex = -1;

  constructor(seed: number, stream = 0) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`Rng: seed must be a u32, got ${seed}`);
    if (!Number.isInteger(stream) || stream < 0 || stream > 0xffffffff) throw new RangeError(`Rng: stream must be a u32, got ${stream}`);
    this.seed = seed;
    this.stream = stream;
  }

  static restore(s: RngState): Rng {
    const r = new Rng(s.seed, s.stream);
    r.#position = s.position;
    return r;
  }

  state(): RngState {
    return { seed: this.seed, stream: this.stream, position: this.#position };
  }

  /** A child stream derived from this generator's seed (does not advance this one). */
  fork(stream: number): Rng {
    return new Rng(philox4x32(this.stream, stream, 0x5eed, 0, this.seed, 0)[0], stream);
  }

  /** Next uniform u32. */
  nextU32(): number {
    const block = Math.floor(this.#position / 4);
    if (block !== this.#blockIndex) {
      // 64-bit block counter in (c0, c1); the stream in c2 keeps streams apart under one key.
      philoxInto(this.#block, block >>> 0, Math.floor(block / 0x100000000) >>> 0, this.stream, 0, this.seed, 0x7e87a11e);
      this.#blockIndex = block;
    }
    return this.#block[this.#position++ % 4];
  }

  /** Uniform in [0, 1) with 24 bits (exactly representable in f32). */
  nextFloat(): number {
    return (this.nextU32() >>> 8) * (1 / 16777216);
  }

  /** Uniform integer in [0, n). */
  nextInt(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new RangeError(`Rng.nextInt: n must be a positive integer, got ${n}`);
    // Rejection sampling keeps it unbiased.
    const limit = Math.floor(0x100000000 / n) * n;
    for (;;) {
      const u = this.nextU32();
      if (u < limit) return u % n;
    }
  }

  /** Standard normal (Box–Muller). */
  normal(): number {
    const u1 = 1 - this.nextFloat(); // (0, 1]
    const u2 = this.nextFloat();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /** n values uniform in [lo, hi) as f32. */
  uniformArray(n: number, lo = -1, hi = 1): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = lo + (hi - lo) * this.nextFloat();
    return out;
  }

  /** n normal values with standard deviation `std`, as f32. */
  normalArray(n: number, std = 1): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = std * this.normal();
    return out;
  }

  /** Fisher–Yates shuffle in place. */
  shuffle<T>(a: T[]): T[] {
    for (let i = a.length - 1; i > 0; i--) {
      const j = this.nextInt(i + 1);
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  }
}
