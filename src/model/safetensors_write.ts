/**
 * safetensors writer: deterministic bytes for the same tensors and metadata.
 *
 * Header keys are sorted ("__metadata__" first when present); data is laid out F32 tensors first,
 * then the 16-bit ones (F16, BF16), each group by name (the reference writer also orders by alignment, then name), so every
 * tensor starts on a multiple of its element size. The header is padded with spaces (0x20) so the
 * data section starts on an 8-byte boundary, as the format asks.
 *
 * F16 and BF16 tensors take either raw bits (Uint16Array) or f32 values (Float32Array, rounded to
 * nearest even; BF16 is how most Hub checkpoints are stored). Bad input throws SafetensorsError naming the tensor and the file being written.
 */
import { SafetensorsError } from './errors.ts';
import { f32ToBf16Array, f32ToF16Array } from './f16.ts';
import { FORBIDDEN_KEYS } from './json.ts';

export interface TensorToWrite {
  readonly name: string;
  readonly shape: readonly number[];
  /** Storage dtype in the file. */
  readonly dtype: 'F32' | 'F16' | 'BF16';
  /** F32: Float32Array. F16, BF16: Uint16Array of bits, or Float32Array values to convert. */
  readonly data: Float32Array | Uint16Array;
}

export interface WriteOptions {
  /** String → string map stored as "__metadata__". */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Name for errors (default '<output>'). */
  readonly file?: string;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function checkName(name: string, file: string): void {
  if (typeof name !== 'string' || name === '' || name === '__metadata__' || FORBIDDEN_KEYS.has(name)) {
    throw new SafetensorsError('header', file, String(name), 'tensor names must be non-empty and not "__metadata__", "__proto__", "constructor" or "prototype"');
  }
}

/** Serializes `tensors` (any order; names unique) to safetensors bytes. */
export function writeSafetensors(tensors: readonly TensorToWrite[], opts: WriteOptions = {}): Uint8Array {
  const file = opts.file ?? '<output>';
  const seen = new Set<string>();
  const prepared = tensors.map((t) => {
    checkName(t.name, file);
    if (seen.has(t.name)) throw new SafetensorsError('header', file, t.name, 'appears twice');
    seen.add(t.name);
    if (t.dtype !== 'F32' && t.dtype !== 'F16' && t.dtype !== 'BF16') throw new SafetensorsError('dtype', file, t.name, `cannot write dtype ${JSON.stringify(t.dtype)} (F32, F16 or BF16)`);
    if (!Array.isArray(t.shape) || !t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new SafetensorsError('shape', file, t.name, 'shape must be an array of non-negative integers');
    }
    const numel = t.shape.reduce((a, b) => a * b, 1);
    if (numel !== t.data.length) throw new SafetensorsError('shape', file, t.name, `shape [${t.shape.join(', ')}] has ${numel} elements but data has ${t.data.length}`);
    let data: Float32Array | Uint16Array;
    if (t.dtype === 'F32') {
      if (!(t.data instanceof Float32Array)) throw new SafetensorsError('dtype', file, t.name, 'F32 data must be a Float32Array');
      data = t.data;
    } else {
      data = t.data instanceof Uint16Array ? t.data : t.dtype === 'BF16' ? f32ToBf16Array(t.data) : f32ToF16Array(t.data);
    }
    return { name: t.name, shape: [...t.shape], dtype: t.dtype, data };
  });

  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const layout = [...prepared.filter((t) => t.dtype === 'F32').sort(byName), ...prepared.filter((t) => t.dtype !== 'F32').sort(byName)];
  const header: Record<string, unknown> = {};
  let offset = 0;
  const offsets = new Map<string, [number, number]>();
  for (const t of layout) {
    offsets.set(t.name, [offset, offset + t.data.byteLength]);
    offset += t.data.byteLength;
  }
  if (opts.metadata) {
    const meta: Record<string, string> = {};
    for (const k of Object.keys(opts.metadata).sort()) {
      const v = opts.metadata[k];
      if (FORBIDDEN_KEYS.has(k) || typeof v !== 'string') throw new SafetensorsError('header', file, undefined, `__metadata__ key "${k}" must be allowed and map to a string`);
      meta[k] = v;
    }
    header.__metadata__ = meta;
  }
  for (const t of [...prepared].sort(byName)) header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: offsets.get(t.name) };

  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLen = json.byteLength + ((8 - ((8 + json.byteLength) % 8)) % 8);
  const out = new Uint8Array(8 + headerLen + offset);
  const view = new DataView(out.buffer);
  view.setUint32(0, headerLen % 2 ** 32, true);
  view.setUint32(4, Math.floor(headerLen / 2 ** 32), true);
  out.set(json, 8);
  out.fill(0x20, 8 + json.byteLength, 8 + headerLen);
  let at = 8 + headerLen;
  for (const t of layout) {
    const bytes = new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    out.set(bytes, at);
    if (!LITTLE_ENDIAN) {
      const size = t.data.BYTES_PER_ELEMENT;
      for (let i = at; i < at + bytes.byteLength; i += size) out.subarray(i, i + size).reverse();
    }
    at += bytes.byteLength;
  }
  return out;
}
