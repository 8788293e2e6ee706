/**
 * The bytes of the fleet's rollout messages: a frame is 'WTR1', the length of a JSON header, the
 * header, and a binary section (8-byte aligned). Numbers never travel as JSON decimals: every
 * array of numbers goes to the binary section in the narrowest type that holds each element
 * exactly (i32 for token ids and masks, f32 for log-probs the engine computed in f32, f64 for
 * anything else), typed arrays keep their type (a tensor arrives as the Float32Array it left), and
 * every scalar that is not a safe integer (rewards, NaN, −0, ±Infinity) is an f64 there too. So a
 * trajectory decodes to the same bits it was encoded from — what a bitwise equal run needs.
 * Browser-safe (no Node built-ins): a tab can be a rollout worker.
 */
const MAGIC = 0x31525457; // 'WTR1' little-endian
/** Marks an encoded numeric array or scalar in the header: [kind, byte offset, length]. */
const REF = '\u0000wt';

type Kind = 'i32' | 'f32' | 'f64' | 'F32' | 'I32' | 'U8' | 'F64' | 'U32' | 'I8' | 'U16' | 'I16';
const CTOR = {
  i32: Int32Array, f32: Float32Array, f64: Float64Array, F32: Float32Array, I32: Int32Array, U8: Uint8Array, F64: Float64Array, U32: Uint32Array, I8: Int8Array, U16: Uint16Array, I16: Int16Array,
} as const;
const TYPED: [abstract new (...a: never[]) => ArrayBufferView, Kind][] = [[Float32Array, 'F32'], [Int32Array, 'I32'], [Uint8Array, 'U8'], [Float64Array, 'F64'], [Uint32Array, 'U32'], [Int8Array, 'I8'], [Uint16Array, 'U16'], [Int16Array, 'I16']];

const isI32 = (x: number) => Number.isInteger(x) && x >= -(2 ** 31) && x < 2 ** 31 && !Object.is(x, -0);
const isF32 = (x: number) => Number.isNaN(x) || Math.fround(x) === x;

/** `value` (plain JSON-like data, numeric arrays, typed arrays) as one frame. */
export function packFrame(value: unknown): Uint8Array {
  const chunks: { kind: Kind; data: ArrayBufferView; offset: number }[] = [];
  let size = 0;
  const put = (kind: Kind, data: ArrayBufferView, length: number) => {
    const offset = size;
    chunks.push({ kind, data, offset });
    size += Math.ceil(data.byteLength / 8) * 8;
    return { [REF]: [kind, offset, length] };
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'number') return Number.isSafeInteger(v) && !Object.is(v, -0) ? v : put('f64', new Float64Array([v]), -1);
    if (ArrayBuffer.isView(v)) {
      const t = TYPED.find(([c]) => v instanceof c);
      if (!t) throw new TypeError(`packFrame: cannot encode a ${v.constructor.name}`);
      return put(t[1], v, (v as unknown as { length: number }).length);
    }
    if (Array.isArray(v)) {
      if (v.length > 0 && v.every((x) => typeof x === 'number')) {
        const nums = v as number[];
        const kind: Kind = nums.every(isI32) ? 'i32' : nums.every(isF32) ? 'f32' : 'f64';
        return put(kind, new CTOR[kind](nums), nums.length);
      }
      return v.map(walk);
    }
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  const header = new TextEncoder().encode(JSON.stringify(walk(value)));
  const start = Math.ceil((8 + header.length) / 8) * 8;
  const out = new Uint8Array(start + size);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, MAGIC, true);
  dv.setUint32(4, header.length, true);
  out.set(header, 8);
  for (const c of chunks) out.set(new Uint8Array(c.data.buffer, c.data.byteOffset, c.data.byteLength), start + c.offset);
  return out;
}

/** The value of a frame (packFrame's inverse). Throws on bytes that are not a frame. */
export function unpackFrame<T = unknown>(bytes: Uint8Array): T {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 8 || dv.getUint32(0, true) !== MAGIC) throw new Error('not a webtinker rollout frame');
  const n = dv.getUint32(4, true);
  const start = Math.ceil((8 + n) / 8) * 8;
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const read = ([kind, offset, length]: [Kind, number, number]): unknown => {
    const C = CTOR[kind];
    const count = length < 0 ? 1 : length;
    // Copied out (aligned, and owned): `bytes` may be a view into a larger buffer, and a Node
    // Buffer's slice() is a view too.
    const copy = new Uint8Array(count * C.BYTES_PER_ELEMENT);
    copy.set(new Uint8Array(bytes.buffer, bytes.byteOffset + start + offset, copy.length));
    const arr = new C(copy.buffer);
    if (length < 0) return arr[0];
    return kind === 'i32' || kind === 'f32' || kind === 'f64' ? Array.from(arr as ArrayLike<number>) : arr;
  };
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const ref = (v as Record<string, unknown>)[REF];
      if (Array.isArray(ref) && Object.keys(v).length === 1) return read(ref as [Kind, number, number]);
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    }
    return v;
  };
  return walk(header) as T;
}
