// The context's cache of scratch textures between recordings (src/gpu/texture_cache.ts), with
// stand-in textures: which one a request gets, and the byte limit.
import { describe, expect, it } from 'vitest';
import { CACHE_FIT_SLACK, TextureCache } from '../../src/gpu/texture_cache.ts';

function tex(format: GPUTextureFormat, height: number, bytes = height * 100) {
  const t = { destroyed: false, destroy() { t.destroyed = true; }, label: '' };
  return { texture: t as unknown as GPUTexture, format, height, bytes, t };
}

describe('TextureCache', () => {
  it('gives the kept texture of the format with the fewest rows that fit, once', () => {
    const c = new TextureCache();
    const a = tex('rgba32float', 4), b = tex('rgba32float', 2), h = tex('rgba16float', 1);
    for (const x of [a, b, h]) c.put(x);
    expect(c.bytes).toBe(700);
    expect(c.take('rgba32float', 1)).toBe(b);
    expect(c.take('rgba32float', 3)).toBe(a);
    expect(c.take('rgba32float', 1)).toBeNull();
    expect(c.take('rgba16float', 2)).toBeNull();
    expect(c.take('rgba16float', 1)).toBe(h);
    expect([c.size, c.bytes]).toEqual([0, 0]);
  });

  it(`serves no request of under 1/${CACHE_FIT_SLACK} of a texture's rows (it is charged at its own size)`, () => {
    const c = new TextureCache();
    const big = tex('rgba32float', 48), mid = tex('rgba32float', 8);
    c.put(big);
    expect(c.take('rgba32float', 1)).toBeNull();
    expect(c.take('rgba32float', 48 / CACHE_FIT_SLACK - 1)).toBeNull();
    expect(c.take('rgba32float', 48 / CACHE_FIT_SLACK)).toBe(big);
    c.put(big);
    c.put(mid);
    expect(c.take('rgba32float', 5)).toBe(mid);
    expect(c.take('rgba32float', 5)).toBeNull();
    expect(c.take('rgba32float', 30)).toBe(big);
  });

  it('keeps at most limitBytes, destroying the oldest first; trim destroys the rest', () => {
    const c = new TextureCache(500);
    const a = tex('rgba32float', 2), b = tex('rgba32float', 2), d = tex('rgba32float', 2), big = tex('rgba32float', 6);
    c.put(a);
    c.put(b);
    expect(a.t.destroyed).toBe(false);
    c.put(d); // 600 > 500: a goes
    expect([a.t.destroyed, b.t.destroyed, d.t.destroyed]).toEqual([true, false, false]);
    expect(c.bytes).toBe(400);
    c.put(big); // alone over the limit: destroyed at once, nothing else evicted
    expect(big.t.destroyed).toBe(true);
    expect(c.size).toBe(2);
    c.trim();
    expect([b.t.destroyed, d.t.destroyed, c.bytes, c.size]).toEqual([true, true, 0, 0]);
  });
});
