/**
 * IEEE half (F16) and bfloat16 (BF16) conversions on raw bits (Uint16Array), the way weights
 * travel host-side (src/gpu/tensor.ts keeps f16 tensors as Uint16Array bits too).
 *
 * f32 → f16 rounds to nearest, ties to even, with subnormals, overflow to ±Inf and NaN kept NaN.
 * f16 → f32 is exact (a 64K-entry table built on first use). BF16 → f32 is a 16-bit shift.
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** f32 value → f16 bits (round to nearest even). */
export function f32ToF16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half: value = m·2^−24, m = full·2^(e−14).
    if (e < -10) return sign;
    const full = mant | 0x800000;
    const shift = 14 - e;
    let m = full >>> shift;
    const rem = full & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (m & 1) === 1)) m++;
    return sign | m; // m may reach 1024: that is exactly the smallest normal's bit pattern
  }
  let h = sign | (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++; // a carry rolls into the exponent (and up to Inf) correctly
  return h;
}

let table: Float32Array | null = null;

function halfTable(): Float32Array {
  if (table) return table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1;
    const e = (h >>> 10) & 0x1f;
    const m = h & 0x3ff;
    if (e === 0) t[h] = s * m * 2 ** -24;
    else if (e === 31) t[h] = m !== 0 ? NaN : s * Infinity;
    else t[h] = s * (1 + m / 1024) * 2 ** (e - 15);
  }
  table = t;
  return t;
}

/** f16 bits → f32 value. */
export function f16BitsToF32(h: number): number {
  return halfTable()[h & 0xffff];
}

/** Array forms. */
export function f16ToF32Array(bits: Uint16Array): Float32Array {
  const t = halfTable();
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = t[bits[i]];
  return out;
}

export function f32ToF16Array(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = f32ToF16Bits(values[i]);
  return out;
}

/**
 * f32 → bfloat16 bits (the high half of the f32), rounded to nearest even as torch's
 * `.to(torch.bfloat16)`; NaN stays a quiet NaN of its sign.
 */
export function f32ToBf16Array(values: Float32Array): Uint16Array {
  const u = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  for (let i = 0; i < u.length; i++) {
    const x = u[i];
    if ((x & 0x7fffffff) > 0x7f800000) out[i] = (x >>> 16) | 0x40;
    else out[i] = (x + 0x7fff + ((x >>> 16) & 1)) >>> 16;
  }
  return out;
}

export function bf16ToF32Array(bits: Uint16Array): Float32Array {
  const out = new Uint32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = bits[i] << 16;
  return new Float32Array(out.buffer);
}
