/**
 * A recording's texture copies of tensors: what texture reads (DeviceQuirks.textureReads, llvmpipe)
 * need from the Recorder, kept apart from its general path. The Recorder's `tempTexture`,
 * `releaseTexture` and `texels` delegate here; it records the copy commands in order with its
 * dispatches and has them encoded here at submit.
 *
 *   - scratch copies (`temp`): a texture per copy, given back within the recording for the next
 *     copy that fits it (`release`), and to the context's TextureCache after the submit;
 *   - kept copies (`texels` of a tensor marked `keepTexels`, a weight): the context's
 *     KeptTexelStore holds them between recordings, copied again only after a write to the tensor.
 */
import { LimitError, ReleasedError, WebtinkerError } from '../errors.ts';
import type { GpuContext } from './device.ts';
import type { KeptTexels } from './kept_texels.ts';
import type { TextureBinding } from './recorder.ts';
import type { Tensor } from './tensor.ts';
import { type CachedTexture, newTexelTexture, takeFitting, type TexelLayout, texelLayout } from './texture_cache.ts';

/** A tensor's elements as rgba32float texels of a W-wide 2-D texture, row-major (see `Recorder.tempTexture`). */
export interface TexelTable extends TextureBinding {
  readonly texture: GPUTexture;
  /** Texels per texture row. */
  readonly width: number;
  /** A copy the context keeps between recordings (`Recorder.texels`), not a scratch texture. */
  readonly kept?: boolean;
}

/**
 * Texels per row of a `tempTexture`: rows of whole 256-byte multiples (copyBufferToTexture's
 * bytesPerRow, for 16- and 8-byte texels), at most 8192 texels — 8192 on every adapter, as WebGPU
 * guarantees maxTextureDimension2D ≥ 8192.
 */
export function texelTableWidth(ctx: GpuContext): number {
  return Math.max(32, Math.floor(Math.min(8192, ctx.limit('maxTextureDimension2D')) / 32) * 32);
}

/** The commands a recording's copies add to its list, in order with its dispatches. */
export type TexelCommand =
  | { kind: 'texels'; src: GPUBuffer; srcOffset: number; dst: GPUTexture; layout: TexelLayout }
  | { kind: 'kept'; entry: KeptTexels; layout: TexelLayout };

/** One recording's texture copies (one per Recorder). */
export class TexelCopies {
  readonly #ctx: GpuContext;
  readonly #label: string;
  readonly #owner: string;
  readonly #push: (c: TexelCommand) => void;
  /** Every scratch texture of the recording (to the context's TextureCache at submit) ... */
  #textures: CachedTexture[] = [];
  /** ... and those given back by release, free for a later temp of this recording. */
  #free: CachedTexture[] = [];
  /** Kept copies (re)made by the submission being encoded: forgotten again if it fails. */
  #copied: KeptTexels[] = [];

  constructor(ctx: GpuContext, label: string, owner: string, push: (c: TexelCommand) => void) {
    this.#ctx = ctx;
    this.#label = label;
    this.#owner = owner;
    this.#push = push;
  }

  /** Recorder.tempTexture. */
  temp(src: Tensor, label: string): TexelTable {
    const l = texelLayout(src, texelTableWidth(this.#ctx));
    if (!this.#fits(l)) {
      throw new LimitError(label, `${src} cannot be laid out as ${l.format} texels of a ${l.width}-wide texture (${l.texels} texels, maxTextureDimension2D ${this.#ctx.limit('maxTextureDimension2D')})`);
    }
    // One given back earlier in this recording, else one kept from an earlier recording (no
    // allocation, no first-touch faults; charged again), else a new one.
    const name = `${this.#label}/${label}`;
    let scratch = takeFitting(this.#free, l.format, l.height);
    if (!scratch) {
      scratch = this.#ctx.textureCache.take(l.format, l.height) ?? newTexelTexture(this.#ctx.device, name, l);
      this.#ctx.pool.charge(this.#owner, scratch.bytes);
      this.#textures.push(scratch);
    }
    scratch.texture.label = name;
    const { texture } = scratch;
    this.#push({ kind: 'texels', src: src.buffer, srcOffset: src.byteOffset, dst: texture, layout: l });
    return { texture, textureView: texture.createView(), width: l.width };
  }

  /** Whether a layout is a whole number of texels within the device's texture height. */
  #fits(l: TexelLayout): boolean {
    return Number.isInteger(l.texels) && l.height <= this.#ctx.limit('maxTextureDimension2D');
  }

  /** Recorder.releaseTexture. */
  release(table: TexelTable): void {
    if (table.kept) return;
    const t = this.#textures.find((x) => x.texture === table.texture);
    if (!t) throw new WebtinkerError('texture-unknown', `texture "${table.texture.label}" is not a scratch texture of recorder "${this.#label}"`);
    if (this.#free.includes(t)) throw new ReleasedError(`texture "${table.texture.label}" of recorder "${this.#label}"`);
    this.#free.push(t);
  }

  /** Recorder.texels. */
  texels(src: Tensor, label: string): TexelTable {
    const l = texelLayout(src, texelTableWidth(this.#ctx));
    const entry = src.keepTexels && this.#fits(l) ? this.#ctx.keptTexels.keep(src, l) : null;
    if (!entry) return this.temp(src, label);
    this.#push({ kind: 'kept', entry, layout: l });
    return { texture: entry.texture, textureView: entry.view, width: l.width, kept: true };
  }

  /**
   * Encodes one of the commands, outside a compute pass (`endPass` ends the open one first): a
   * scratch copy always, a kept copy only where the tensor was written since it was copied.
   */
  encode(enc: GPUCommandEncoder, c: TexelCommand, endPass: () => void): void {
    if (c.kind === 'texels') {
      endPass();
      copyTexels(enc, c.src, c.srcOffset, c.dst, c.layout);
      return;
    }
    const kept = this.#ctx.keptTexels;
    const gen = kept.generation(c.entry.buffer);
    if (c.entry.gen !== gen) {
      endPass();
      copyTexels(enc, c.entry.buffer, c.entry.byteOffset, c.entry.texture, c.layout);
      c.entry.gen = gen;
      kept.copies++;
      this.#copied.push(c.entry);
    }
  }

  /** The submission failed: the kept copies it made are not to be trusted. */
  failed(): void {
    for (const e of this.#copied) e.gen = -1;
  }

  /** Scratch textures to the context's cache (safe after the submit, by queue order). */
  releaseAll(): void {
    this.#free.length = 0;
    for (const t of this.#textures.splice(0)) {
      this.#ctx.pool.uncharge(this.#owner, t.bytes);
      if (this.#ctx.isLost) t.texture.destroy();
      else this.#ctx.textureCache.put(t);
    }
  }
}

/** Texel k of a `width`-wide texture ← elements 4k .. 4k+3 of `src` from `srcOffset` (whole rows, then the rest). */
function copyTexels(enc: GPUCommandEncoder, src: GPUBuffer, srcOffset: number, dst: GPUTexture, l: TexelLayout): void {
  const rowBytes = l.texelBytes * l.width;
  const full = Math.floor(l.texels / l.width);
  const rest = l.texels - full * l.width;
  if (full > 0) enc.copyBufferToTexture({ buffer: src, offset: srcOffset, bytesPerRow: rowBytes }, { texture: dst }, [l.width, full]);
  if (rest > 0) enc.copyBufferToTexture({ buffer: src, offset: srcOffset + full * rowBytes, bytesPerRow: rowBytes }, { texture: dst, origin: [0, full] }, [rest, 1]);
}
