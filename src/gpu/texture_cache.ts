/**
 * Scratch textures kept between recordings (Recorder.tempTexture), as the buffer pool keeps
 * released buffers. On Mesa's llvmpipe a new texture's memory is allocated and faulted in on its
 * first write, so a copy into a fresh texture costs several times the same copy into a texture
 * kept from before. Recordings that read their operands through
 * texture copies (every matmul and the policy loss there) make the same sizes step after step, so
 * they take them from here.
 *
 * Reuse is safe by queue order, as for pooled buffers: a recording gives its textures back when
 * its work is submitted, and a later recording's copy into one runs after every command of the
 * earlier submission. Kept bytes are bounded (`limitBytes`, oldest destroyed first); they are not
 * live, so the buffer pool's live stats do not count them (`bytes` says what is held).
 */

export interface CachedTexture {
  readonly texture: GPUTexture;
  readonly format: GPUTextureFormat;
  /** Texel rows (the width is the context's texelTableWidth). */
  readonly height: number;
  readonly bytes: number;
}

/** How a tensor's elements lie as texels of a `width`-wide texture (4 elements a texel). */
export interface TexelLayout {
  /** rgba32float, or rgba16float for f16 elements (a fetch widens them to f32 exactly). */
  readonly format: GPUTextureFormat;
  readonly texelBytes: number;
  /** Texels the tensor's binding fills (not an integer when it is no whole number of texels). */
  readonly texels: number;
  readonly width: number;
  /** Texel rows. */
  readonly height: number;
}

/** The layout of `src`'s binding (bindingBytes) as texels of a `width`-wide texture. */
export function texelLayout(src: { dtype: string; bindingBytes: number }, width: number): TexelLayout {
  const half = src.dtype === 'f16';
  const texelBytes = half ? 8 : 16;
  const texels = src.bindingBytes / texelBytes;
  return { format: half ? 'rgba16float' : 'rgba32float', texelBytes, texels, width, height: Math.max(1, Math.ceil(texels / width)) };
}

/** A new texture for a layout's texels (sampled, copied into). */
export function newTexelTexture(device: GPUDevice, label: string, l: TexelLayout): CachedTexture {
  const texture = device.createTexture({ label, size: [l.width, l.height], format: l.format, usage: GPUTextureUsage.TEXTURE_BINDING | GPUTextureUsage.COPY_DST });
  return { texture, format: l.format, height: l.height, bytes: l.width * l.height * l.texelBytes };
}

/**
 * Removes from `list` and returns the texture of `format` with the fewest rows ≥ `height` (and ≤
 * `maxHeight`), or null: the fit rule of the cache and of a recording's textures given back
 * (Recorder.releaseTexture).
 */
export function takeFitting(list: CachedTexture[], format: GPUTextureFormat, height: number, maxHeight = Infinity): CachedTexture | null {
  let best = -1;
  list.forEach((t, i) => {
    if (t.format === format && t.height >= height && t.height <= maxHeight && (best < 0 || t.height < list[best].height)) best = i;
  });
  return best < 0 ? null : list.splice(best, 1)[0];
}

/** A cached texture serves a request of up to this many times fewer rows (the buffer pool's size classes waste at most 1.5×). */
export const CACHE_FIT_SLACK = 2;

export class TextureCache {
  /** Most bytes kept; a texture given back beyond it destroys the oldest kept ones first. */
  limitBytes: number;
  #kept: CachedTexture[] = [];
  #bytes = 0;

  constructor(limitBytes = 512 * 2 ** 20) {
    this.limitBytes = limitBytes;
  }

  /** Bytes of the textures kept. */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#kept.length;
  }

  /**
   * The kept texture of `format` with the fewest rows ≥ `height` and at most CACHE_FIT_SLACK times
   * as many (removed from the cache), or null. The bound matters because a texture taken is
   * charged to its taker at its own size: without it a weight's 1-row copy could take a 48-row
   * scratch texture of an evaluation's activations, and a job that makes a new sampler snapshot
   * every step (the paper bench's full-parameter RL phase) would peak well above what fresh
   * textures cost it.
   */
  take(format: GPUTextureFormat, height: number): CachedTexture | null {
    const t = takeFitting(this.#kept, format, height, CACHE_FIT_SLACK * height);
    if (t) this.#bytes -= t.bytes;
    return t;
  }

  /** Keep `t` for a later recording (destroyed at once when it alone is over the limit). */
  put(t: CachedTexture): void {
    if (t.bytes > this.limitBytes) {
      t.texture.destroy();
      return;
    }
    this.#kept.push(t);
    this.#bytes += t.bytes;
    while (this.#bytes > this.limitBytes) {
      const old = this.#kept.shift()!;
      this.#bytes -= old.bytes;
      old.texture.destroy();
    }
  }

  /** Destroy every kept texture. */
  trim(): void {
    for (const t of this.#kept.splice(0)) t.texture.destroy();
    this.#bytes = 0;
  }
}
