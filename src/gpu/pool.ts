/**
 * Size-bucketed GPU buffer pool with byte accounting per owner.
 *
 * Buffers come in size classes 2^k and 1.5·2^k (at most a third wasted), so a freed buffer is
 * reused by the next request of the same class instead of being destroyed and re-created — the
 * training step allocates the same shapes every step. Accounting counts the bytes of the buffers
 * actually created (the class size), which is what the device pays for:
 *   - per owner (a job, a model): live bytes now and at peak;
 *   - the whole pool: live bytes, cached free bytes, and their sum (reserved) now and at peak.
 * Nothing is freed implicitly: callers release what they acquire; `releaseOwner` releases
 * everything an owner still holds (job teardown, a failed load).
 */
import { LimitError, ReleasedError } from '../errors.ts';

/**
 * GPUBufferUsage bits, spelled out so this module also loads where the WebGPU globals are absent
 * (Node unit tests drive the pool with a fake device). Values from the WebGPU spec.
 */
export const BufferUsage = {
  MAP_READ: 0x0001,
  MAP_WRITE: 0x0002,
  COPY_SRC: 0x0004,
  COPY_DST: 0x0008,
  UNIFORM: 0x0040,
  STORAGE: 0x0080,
  QUERY_RESOLVE: 0x0200,
} as const;

export const STORAGE_USAGE = BufferUsage.STORAGE | BufferUsage.COPY_SRC | BufferUsage.COPY_DST;

/** The smallest size class, in bytes. */
export const MIN_BUCKET_BYTES = 256;

/** Size class for a request: the smallest 2^k or 1.5·2^k ≥ bytes (≥ 256), 4-byte aligned. */
export function bucketBytes(bytes: number): number {
  if (!Number.isFinite(bytes) || bytes < 0) throw new RangeError(`bucketBytes: invalid byte count ${bytes}`);
  if (bytes <= MIN_BUCKET_BYTES) return MIN_BUCKET_BYTES;
  const p = 2 ** Math.ceil(Math.log2(bytes));
  const mid = (p / 4) * 3; // 1.5 · 2^(k-1)
  return mid >= bytes ? mid : p;
}

export interface OwnerStats {
  currentBytes: number;
  peakBytes: number;
  buffers: number;
}

export interface PoolStats {
  /** Bytes in buffers handed out and not yet released. */
  liveBytes: number;
  peakLiveBytes: number;
  /** Bytes in released buffers kept for reuse. */
  cachedBytes: number;
  /** live + cached: what the pool holds on the device. */
  reservedBytes: number;
  peakReservedBytes: number;
  liveBuffers: number;
  cachedBuffers: number;
  owners: Record<string, OwnerStats>;
}

export interface PooledBuffer {
  readonly buffer: GPUBuffer;
  /** Size class actually allocated. */
  readonly bytes: number;
  readonly owner: string;
}

interface Live {
  bytes: number;
  owner: string;
  /** Sized to its request, not a class: destroyed on release. */
  exact: boolean;
}

export class BufferPool {
  readonly device: GPUDevice;
  readonly usage: GPUBufferUsageFlags;
  #free = new Map<number, GPUBuffer[]>();
  #live = new Map<GPUBuffer, Live>();
  #owners = new Map<string, OwnerStats>();
  #liveBytes = 0;
  #peakLive = 0;
  #cachedBytes = 0;
  #peakReserved = 0;
  #cachedBuffers = 0;
  /** Largest number of cached bytes kept; beyond it released buffers are destroyed. */
  cacheLimitBytes: number;

  constructor(device: GPUDevice, usage: GPUBufferUsageFlags = STORAGE_USAGE, cacheLimitBytes = Number.POSITIVE_INFINITY) {
    this.device = device;
    this.usage = usage;
    this.cacheLimitBytes = cacheLimitBytes;
  }

  /**
   * A buffer of at least `bytes` bytes, owned by `owner` until released. `exact`: of `bytes`
   * rounded up to 16 only (a long-lived tensor), made anew and destroyed on release.
   */
  acquire(bytes: number, owner: string, label: string, opts: { exact?: boolean } = {}): PooledBuffer {
    const maxBuffer = this.device.limits.maxBufferSize;
    if (bytes > maxBuffer) {
      throw new LimitError('pool', `buffer "${label}" of ${bytes} bytes exceeds the device's maxBufferSize of ${maxBuffer} bytes`);
    }
    const exact = Boolean(opts.exact);
    let size = exact ? Math.max(16, Math.ceil(bytes / 16) * 16) : bucketBytes(bytes);
    if (size > maxBuffer) size = Math.ceil(bytes / 4) * 4;
    let buffer = exact ? undefined : this.#free.get(size)?.pop();
    if (buffer) {
      this.#cachedBytes -= size;
      this.#cachedBuffers--;
      buffer.label = label;
    } else {
      buffer = this.device.createBuffer({ size, usage: this.usage, label });
    }
    this.#live.set(buffer, { bytes: size, owner, exact });
    this.#liveBytes += size;
    this.#peakLive = Math.max(this.#peakLive, this.#liveBytes);
    this.#peakReserved = Math.max(this.#peakReserved, this.#liveBytes + this.#cachedBytes);
    const o = this.#owners.get(owner) ?? { currentBytes: 0, peakBytes: 0, buffers: 0 };
    o.currentBytes += size;
    o.buffers++;
    o.peakBytes = Math.max(o.peakBytes, o.currentBytes);
    this.#owners.set(owner, o);
    return { buffer, bytes: size, owner };
  }

  /** Return a buffer to the pool. Releasing twice throws. */
  release(buffer: GPUBuffer): void {
    const live = this.#live.get(buffer);
    if (!live) throw new ReleasedError(`buffer "${buffer.label}"`);
    this.#live.delete(buffer);
    this.#liveBytes -= live.bytes;
    const o = this.#owners.get(live.owner)!;
    o.currentBytes -= live.bytes;
    o.buffers--;
    if (live.exact || this.#cachedBytes + live.bytes > this.cacheLimitBytes) {
      buffer.destroy();
      return;
    }
    const list = this.#free.get(live.bytes) ?? [];
    list.push(buffer);
    this.#free.set(live.bytes, list);
    this.#cachedBytes += live.bytes;
    this.#cachedBuffers++;
  }

  /** Release every buffer `owner` still holds; returns how many bytes that freed. */
  releaseOwner(owner: string): number {
    let freed = 0;
    for (const [buf, live] of [...this.#live]) {
      if (live.owner === owner) {
        freed += live.bytes;
        this.release(buf);
      }
    }
    return freed;
  }

  /**
   * Count `bytes` of device memory the pool did not hand out (a texture) as live and owned by
   * `owner`, so pool-wide and per-owner stats and peaks include it; `uncharge` takes it back.
   */
  charge(owner: string, bytes: number): void {
    this.#liveBytes += bytes;
    this.#peakLive = Math.max(this.#peakLive, this.#liveBytes);
    this.#peakReserved = Math.max(this.#peakReserved, this.#liveBytes + this.#cachedBytes);
    const o = this.#owners.get(owner) ?? { currentBytes: 0, peakBytes: 0, buffers: 0 };
    o.currentBytes += bytes;
    o.peakBytes = Math.max(o.peakBytes, o.currentBytes);
    this.#owners.set(owner, o);
  }

  uncharge(owner: string, bytes: number): void {
    const o = this.#owners.get(owner);
    if (!o || o.currentBytes < bytes) throw new ReleasedError(`${bytes} charged bytes of owner "${owner}"`);
    this.#liveBytes -= bytes;
    o.currentBytes -= bytes;
  }

  isLive(buffer: GPUBuffer): boolean {
    return this.#live.has(buffer);
  }

  /** Destroy every cached (released) buffer. Live buffers are untouched. */
  trim(): void {
    for (const list of this.#free.values()) for (const b of list) b.destroy();
    this.#free.clear();
    this.#cachedBytes = 0;
    this.#cachedBuffers = 0;
  }

  /** Reset the peaks (pool-wide and per owner) to the current values, e.g. before a benchmark. */
  resetPeaks(): void {
    this.#peakLive = this.#liveBytes;
    this.#peakReserved = this.#liveBytes + this.#cachedBytes;
    for (const o of this.#owners.values()) o.peakBytes = o.currentBytes;
  }

  owner(owner: string): OwnerStats {
    const o = this.#owners.get(owner);
    return o ? { ...o } : { currentBytes: 0, peakBytes: 0, buffers: 0 };
  }

  stats(): PoolStats {
    const owners: Record<string, OwnerStats> = {};
    for (const [k, v] of this.#owners) owners[k] = { ...v };
    return {
      liveBytes: this.#liveBytes,
      peakLiveBytes: this.#peakLive,
      cachedBytes: this.#cachedBytes,
      reservedBytes: this.#liveBytes + this.#cachedBytes,
      peakReservedBytes: this.#peakReserved,
      liveBuffers: this.#live.size,
      cachedBuffers: this.#cachedBuffers,
      owners,
    };
  }
}
