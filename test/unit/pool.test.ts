import { describe, expect, it } from 'vitest';
import { BufferPool, bucketBytes, MIN_BUCKET_BYTES, STORAGE_USAGE } from '../../src/gpu/pool.ts';
import { LimitError, ReleasedError } from '../../src/errors.ts';
import { fakeDevice } from './fake_gpu.ts';

describe('bucketBytes', () => {
  it('rounds up to 2^k or 1.5·2^k, at least 256 bytes', () => {
    expect(bucketBytes(0)).toBe(MIN_BUCKET_BYTES);
    expect(bucketBytes(256)).toBe(256);
    expect(bucketBytes(257)).toBe(384);
    expect(bucketBytes(384)).toBe(384);
    expect(bucketBytes(385)).toBe(512);
    expect(bucketBytes(4000)).toBe(4096);
    expect(bucketBytes(3000)).toBe(3072);
    expect(bucketBytes(1_000_000)).toBe(1_048_576);
    expect(bucketBytes(700_000)).toBe(786_432);
  });
  it('wastes at most a third of a request', () => {
    for (let b = 257; b < 1 << 22; b = Math.ceil(b * 1.37)) {
      const c = bucketBytes(b);
      expect(c).toBeGreaterThanOrEqual(b);
      expect(c / b).toBeLessThanOrEqual(1.5);
    }
  });
  it('refuses negative and non-finite sizes', () => {
    expect(() => bucketBytes(-1)).toThrow(RangeError);
    expect(() => bucketBytes(Number.NaN)).toThrow(RangeError);
  });
});

describe('BufferPool accounting', () => {
  it('exact buffers (long-lived weights) take their own size rounded to 16, never a class, and are destroyed on release', () => {
    const dev = fakeDevice();
    const pool = new BufferPool(dev);
    const e = pool.acquire(4_000_004, 'model', 'w', { exact: true }); // a class would be 6 MiB
    expect(e.bytes).toBe(4_000_016);
    expect(pool.acquire(4, 'model', 'tiny', { exact: true }).bytes).toBe(16);
    expect(pool.owner('model')).toEqual({ currentBytes: 4_000_032, peakBytes: 4_000_032, buffers: 2 });
    pool.release(e.buffer);
    expect(pool.stats()).toMatchObject({ cachedBytes: 0, cachedBuffers: 0 }); // not kept for reuse
    const before = dev.created.length;
    pool.acquire(4_000_004, 'model', 'w2', { exact: true });
    expect(dev.created.length).toBe(before + 1);
  });

  it('charges memory it did not hand out (textures) to an owner until uncharged; uncharging more refuses', () => {
    const pool = new BufferPool(fakeDevice());
    pool.acquire(1000, 'rec', 'b'); // 1024
    pool.charge('rec', 5000);
    expect(pool.owner('rec')).toEqual({ currentBytes: 6024, peakBytes: 6024, buffers: 1 });
    expect(pool.stats()).toMatchObject({ liveBytes: 6024, peakLiveBytes: 6024, liveBuffers: 1 });
    pool.uncharge('rec', 5000);
    expect(pool.owner('rec')).toEqual({ currentBytes: 1024, peakBytes: 6024, buffers: 1 });
    expect(pool.stats()).toMatchObject({ liveBytes: 1024, peakLiveBytes: 6024 });
    expect(() => pool.uncharge('rec', 5000)).toThrow(ReleasedError);
    expect(() => pool.uncharge('nobody', 1)).toThrow(ReleasedError);
  });

  it('tracks current and peak bytes per owner and pool-wide through allocate/release patterns', () => {
    const dev = fakeDevice();
    const pool = new BufferPool(dev);
    const a = pool.acquire(4000, 'job-a', 'a1'); // 4096
    const b = pool.acquire(1000, 'job-b', 'b1'); // 1024
    const c = pool.acquire(100, 'job-a', 'a2'); // 256
    expect(pool.owner('job-a')).toEqual({ currentBytes: 4352, peakBytes: 4352, buffers: 2 });
    expect(pool.owner('job-b')).toEqual({ currentBytes: 1024, peakBytes: 1024, buffers: 1 });
    expect(pool.stats()).toMatchObject({ liveBytes: 5376, peakLiveBytes: 5376, cachedBytes: 0, reservedBytes: 5376 });

    pool.release(a.buffer);
    expect(pool.owner('job-a')).toEqual({ currentBytes: 256, peakBytes: 4352, buffers: 1 });
    expect(pool.stats()).toMatchObject({ liveBytes: 1280, peakLiveBytes: 5376, cachedBytes: 4096, reservedBytes: 5376, peakReservedBytes: 5376 });

    // A request of the same class reuses the released buffer: no new device allocation.
    const before = dev.created.length;
    const d = pool.acquire(3500, 'job-b', 'b2');
    expect(dev.created.length).toBe(before);
    expect(d.buffer).toBe(a.buffer);
    expect(d.buffer.label).toBe('b2');
    expect(pool.owner('job-b')).toEqual({ currentBytes: 5120, peakBytes: 5120, buffers: 2 });
    expect(pool.stats()).toMatchObject({ liveBytes: 5376, cachedBytes: 0 });

    // A larger one is new: the peak moves.
    const e = pool.acquire(10_000, 'job-a', 'a3'); // 12288
    expect(pool.stats().peakLiveBytes).toBe(5376 + 12288);
    expect(pool.owner('job-a').peakBytes).toBe(256 + 12288);

    expect(pool.releaseOwner('job-a')).toBe(256 + 12288);
    expect(pool.owner('job-a')).toEqual({ currentBytes: 0, peakBytes: 12544, buffers: 0 });
    pool.release(b.buffer);
    pool.release(d.buffer);
    expect(pool.stats()).toMatchObject({ liveBytes: 0, liveBuffers: 0, cachedBuffers: 4, cachedBytes: 4096 + 1024 + 256 + 12288 });
    void c;
    void e;

    pool.trim();
    expect(pool.stats()).toMatchObject({ cachedBytes: 0, cachedBuffers: 0, reservedBytes: 0 });
    expect(dev.created.every((x) => x.destroyed)).toBe(true);

    pool.resetPeaks();
    expect(pool.stats()).toMatchObject({ peakLiveBytes: 0, peakReservedBytes: 0 });
    expect(pool.owner('job-b').peakBytes).toBe(0);
  });

  it('creates storage buffers, labels them, and refuses double release and oversized requests', () => {
    const dev = fakeDevice({ maxBufferSize: 1 << 20 });
    const pool = new BufferPool(dev);
    const a = pool.acquire(10, 'o', 'tiny');
    expect(dev.created[0]).toMatchObject({ size: 256, usage: STORAGE_USAGE, label: 'tiny' });
    pool.release(a.buffer);
    expect(() => pool.release(a.buffer)).toThrow(ReleasedError);
    expect(() => pool.acquire((1 << 20) + 4, 'o', 'huge')).toThrow(LimitError);
    expect(() => pool.acquire((1 << 20) + 4, 'o', 'huge')).toThrow(/"huge" of 1048580 bytes exceeds the device's maxBufferSize/);
    // A class that would exceed maxBufferSize falls back to the exact (4-aligned) size.
    const pool2 = new BufferPool(fakeDevice({ maxBufferSize: 1_000_000 }));
    expect(pool2.acquire(900_002, 'o', 'big').bytes).toBe(900_004);
  });

  it('destroys released buffers beyond the cache limit', () => {
    const dev = fakeDevice();
    const pool = new BufferPool(dev, STORAGE_USAGE, 1024);
    const a = pool.acquire(1024, 'o', 'a');
    const b = pool.acquire(1024, 'o', 'b');
    pool.release(a.buffer);
    pool.release(b.buffer);
    expect(pool.stats().cachedBytes).toBe(1024);
    expect(dev.created.filter((x) => x.destroyed).length).toBe(1);
  });
});
