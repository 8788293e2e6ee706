import { describe, expect, it } from 'vitest';
import { philox4x32, Rng } from '../../src/util/rng.ts';

const hex = (a: Uint32Array) => [...a].map((x) => x.toString(16).padStart(8, '0'));

describe('philox4x32-10', () => {
  it('matches the Random123 known-answer vectors', () => {
    expect(hex(philox4x32(0, 0, 0, 0, 0, 0))).toEqual(['6627e8d5', 'e169c58d', 'bc57ac4c', '9b00dbd8']);
    expect(hex(philox4x32(0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff)))
      .toEqual(['408f276d', '41c83b0e', 'a20bc7c6', '6d5451fd']);
    expect(hex(philox4x32(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0)))
      .toEqual(['d16cfe09', '94fdcceb', '5001e420', '24126ea1']);
  });
});

describe('Rng', () => {
  it('is reproducible from its seed and restorable from its state mid-stream', () => {
    const a = new Rng(42, 3);
    const first = Array.from({ length: 10 }, () => a.nextU32());
    const b = new Rng(42, 3);
    expect(Array.from({ length: 10 }, () => b.nextU32())).toEqual(first);
    const s = a.state();
    const next = Array.from({ length: 7 }, () => a.nextFloat());
    const c = Rng.restore(JSON.parse(JSON.stringify(s)));
    expect(Array.from({ length: 7 }, () => c.nextFloat())).toEqual(next);
  });
  it('gives different streams for different seeds and streams', () => {
    const x = new Rng(1, 0).nextU32();
    expect(new Rng(2, 0).nextU32()).not.toBe(x);
    expect(new Rng(1, 1).nextU32()).not.toBe(x);
    expect(new Rng(1, 0).fork(5).nextU32()).not.toBe(new Rng(1, 0).fork(6).nextU32());
  });
  it('draws uniform floats in [0,1), unbiased ints, and normals with the right moments', () => {
    const r = new Rng(9);
    const n = 20000;
    let sum = 0;
    const counts = new Array(7).fill(0);
    let s1 = 0;
    let s2 = 0;
    for (let i = 0; i < n; i++) {
      const u = r.nextFloat();
      expect(u).toBeGreaterThanOrEqual(0);
      expect(u).toBeLessThan(1);
      sum += u;
      counts[r.nextInt(7)]++;
      const z = r.normal();
      s1 += z;
      s2 += z * z;
    }
    expect(Math.abs(sum / n - 0.5)).toBeLessThan(0.01);
    for (const c of counts) expect(Math.abs(c / n - 1 / 7)).toBeLessThan(0.01);
    expect(Math.abs(s1 / n)).toBeLessThan(0.03);
    expect(Math.abs(s2 / n - 1)).toBeLessThan(0.05);
  });
  it('refuses seeds that are not u32', () => {
    expect(() => new Rng(-1)).toThrow(RangeError);
    expect(() => new Rng(1.5)).toThrow(/seed must be a u32/);
    expect(() => new Rng(1).nextInt(0)).toThrow(RangeError);
  });
  it('shuffles as a permutation, the same way for the same seed', () => {
    const a = new Rng(3).shuffle([...Array(20).keys()]);
    expect([...a].sort((x, y) => x - y)).toEqual([...Array(20).keys()]);
    expect(new Rng(3).shuffle([...Array(20).keys()])).toEqual(a);
  });
});
