/**
 * Texture copies of tensors that are read often and written rarely — a model's weights — kept
 * from one recording to the next, so the matmul's texture reads (DeviceQuirks.textureReads:
 * llvmpipe; Recorder.texels) copy a weight once instead of in every recording that reads it. Measured on llvmpipe
 * (gpt2-10m, 16 sequences, 8 new tokens): every decode step used to copy all 40 MB of weights.
 *
 * Correctness rests on write generations, tracked in queue order: every command that can change a
 * buffer bumps its generation when it is encoded (a dispatch binding it at a `read_write` storage
 * binding of its kernel, a copy into it) or written (queue.writeBuffer through `written`), and a
 * kept copy remembers the generation it was copied at. A recording checks at encode time, so in
 * submission order: the same generation skips the copy, another one copies again into the same
 * texture. A submission that fails forgets what it copied (the generation goes back to "never").
 *
 * Only tensors that ask for it (`Tensor.keepTexels`: BaseModel's parameters) and fill at least half
 * a texture row (KEPT_TEXELS_MIN_ELEMENTS for f32: whole rows of smaller ones would be mostly
 * padding, and copying them costs little) are kept. The bytes
 * are bounded by `limitBytes`: past it a tensor is not kept (it is copied per recording as
 * before) — nothing is evicted, so a model larger than the bound keeps its first layers rather
 * than cycling every copy through the store. A released tensor's copies go to the context's
 * scratch TextureCache (Tensor.release calls `forget`). Kept bytes are charged to the pool under KEPT_TEXELS_OWNER: they are GPU
 * memory, and peaks count them.
 */
import type { BufferPool } from './pool.ts';
import { type CachedTexture, newTexelTexture, type TexelLayout, type TextureCache } from './texture_cache.ts';

export const KEPT_TEXELS_OWNER = 'texels:kept';
/** Fewest elements of a kept copy: half a row of the 8192-texel-wide tables, 4 elements a texel. */
export const KEPT_TEXELS_MIN_ELEMENTS = 4 * 4096;
/** The default bound of a context's store (512 MiB). */
export const KEPT_TEXELS_LIMIT = 512 * 2 ** 20;

/** One tensor range's texture copy. */
export interface KeptTexels extends CachedTexture {
  readonly buffer: GPUBuffer;
  readonly byteOffset: number;
  readonly bindingBytes: number;
  readonly view: GPUTextureView;
  /** The buffer's write generation the texels were copied at; -1: not copied (or the copy failed). */
  gen: number;
}

/** What the store allocates from and gives back to: its context's device, pool and scratch cache. */
export interface KeptTexelHost {
  readonly device: GPUDevice;
  readonly pool: BufferPool;
  readonly textureCache: TextureCache;
  readonly isLost: boolean;
}

export class KeptTexelStore {
  /** Most bytes kept; a tensor that would go past it is not kept. */
  limitBytes: number;
  /** Copies made into kept textures so far (the first of each, and one after each write). */
  copies = 0;
  readonly #host: KeptTexelHost;
  #gens = new WeakMap<GPUBuffer, number>();
  #kept = new Map<GPUBuffer, KeptTexels[]>();
  #bytes = 0;

  constructor(host: KeptTexelHost, limitBytes = KEPT_TEXELS_LIMIT) {
    this.#host = host;
    this.limitBytes = limitBytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Number of kept copies. */
  get size(): number {
    let n = 0;
    for (const l of this.#kept.values()) n += l.length;
    return n;
  }

  /** The buffer's write generation (0 until something writes it). */
  generation(buffer: GPUBuffer): number {
    return this.#gens.get(buffer) ?? 0;
  }

  /** Something that changes the buffer's contents was encoded or queued. */
  written(buffer: GPUBuffer): void {
    if (this.#kept.has(buffer)) this.#gens.set(buffer, this.generation(buffer) + 1);
  }

  /**
   * The kept copy of `src`'s binding in layout `l` — found, or made (not yet copied: gen -1) from
   * a scratch texture that fits or a new one, and charged — or null where the tensor is not kept:
   * under KEPT_TEXELS_MIN_ELEMENTS (half a row) or past the limit.
   */
  keep(src: { buffer: GPUBuffer; byteOffset: number; bindingBytes: number; label: string }, l: TexelLayout): KeptTexels | null {
    const found = this.#kept.get(src.buffer)?.find((k) => k.byteOffset === src.byteOffset && k.bindingBytes === src.bindingBytes && k.format === l.format);
    if (found) return found;
    if (l.texels < l.width / 2 || this.#bytes + l.width * l.height * l.texelBytes > this.limitBytes) return null;
    const label = `kept ${src.label}`;
    const t = this.#host.textureCache.take(l.format, l.height) ?? newTexelTexture(this.#host.device, label, l);
    t.texture.label = label;
    const entry: KeptTexels = { ...t, buffer: src.buffer, byteOffset: src.byteOffset, bindingBytes: src.bindingBytes, view: t.texture.createView(), gen: -1 };
    const list = this.#kept.get(src.buffer) ?? [];
    list.push(entry);
    this.#kept.set(src.buffer, list);
    this.#bytes += entry.bytes;
    this.#host.pool.charge(KEPT_TEXELS_OWNER, entry.bytes);
    return entry;
  }

  /** The copies of `buffer` are stale for good (its tensor was released): uncharged, their textures to the scratch cache. */
  forget(buffer: GPUBuffer): void {
    for (const k of this.#kept.get(buffer) ?? []) this.#retire(k);
    this.#kept.delete(buffer);
  }

  /** Forget everything kept (the device is going away: the textures are destroyed). */
  forgetAll(): void {
    for (const list of this.#kept.values()) for (const k of list) this.#retire(k, true);
    this.#kept.clear();
  }

  #retire(k: KeptTexels, destroy = this.#host.isLost): void {
    this.#bytes -= k.bytes;
    this.#host.pool.uncharge(KEPT_TEXELS_OWNER, k.bytes);
    if (destroy) k.texture.destroy();
    else this.#host.textureCache.put({ texture: k.texture, format: k.format, height: k.height, bytes: k.bytes });
  }
}
