// Each adapter family's quirks and tunings (src/gpu/quirks/): what is picked for each AdapterKind,
// the tuning override that keeps an adapter's workarounds, and what the ops read from them.
import { describe, expect, it } from 'vitest';
import { type AdapterKind, adapterKind } from '../../src/gpu/adapter_kind.ts';
import { defaultTuning, GPU_TUNINGS, HARDWARE_QUIRKS, LLVMPIPE_LOOP_LIMIT, LLVMPIPE_QUIRKS, quirksFor, SOFTWARE_TUNINGS, tuningsFor } from '../../src/gpu/quirks/mod.ts';
import { expectLoopBudget } from '../../src/gpu/checks.ts';
import type { GpuContext } from '../../src/gpu/device.ts';
import { HARDWARE_MATMUL_CONFIG, matmulConfigFor } from '../../src/ops/matmul.ts';

const KINDS: readonly AdapterKind[] = ['llvmpipe', 'swiftshader', 'software', 'hardware'];

/** The parts of a GpuContext the choices read, as GpuContext builds them. */
const ctxOf = (kind: AdapterKind, tuning = defaultTuning(kind)) =>
  ({ kind, quirks: quirksFor(kind), tuning, tunings: tuningsFor(tuning) }) as unknown as GpuContext;

describe('device quirks', () => {
  it('picks one family per adapter kind: llvmpipe its loop limit and texture reads, the others no workaround', () => {
    expect(quirksFor('llvmpipe')).toBe(LLVMPIPE_QUIRKS);
    expect(quirksFor('llvmpipe')).toEqual({ kind: 'llvmpipe', loopBudget: LLVMPIPE_LOOP_LIMIT, textureReads: true });
    expect(LLVMPIPE_LOOP_LIMIT).toBe(65535);
    for (const kind of ['swiftshader', 'software'] as const) {
      expect(quirksFor(kind)).toEqual({ kind, loopBudget: Number.POSITIVE_INFINITY, textureReads: false });
    }
    expect(quirksFor('hardware')).toBe(HARDWARE_QUIRKS);
    expect(HARDWARE_QUIRKS).toEqual({ kind: 'hardware', loopBudget: Number.POSITIVE_INFINITY, textureReads: false });
    for (const kind of KINDS) {
      expect(quirksFor(kind).kind).toBe(kind);
      expect(Object.isFrozen(quirksFor(kind))).toBe(true);
    }
    // From an adapter's strings to its family, as GpuContext does it.
    const base = { host: 'deno' as const, vendor: '', architecture: '', device: '', description: '', isFallbackAdapter: false, features: [], limits: {} };
    expect(quirksFor(adapterKind({ ...base, description: 'llvmpipe (LLVM 19.1.7, 256 bits)' }))).toBe(LLVMPIPE_QUIRKS);
    expect(quirksFor(adapterKind({ ...base, description: 'NVIDIA H100', vendor: 'nvidia' }))).toBe(HARDWARE_QUIRKS);
  });

  it('tunings follow the tuning (software adapters by default), workarounds the adapter', () => {
    for (const kind of KINDS) expect(defaultTuning(kind)).toBe(kind === 'hardware' ? 'gpu' : 'software');
    expect(tuningsFor('software')).toBe(SOFTWARE_TUNINGS);
    expect(tuningsFor('gpu')).toBe(GPU_TUNINGS);
    // llvmpipe forced to the real-GPU configurations: the tiled matmul (no texture reads: the
    // tiled kernel has none), but the loop limit still guards it.
    const forced = ctxOf('llvmpipe', 'gpu');
    expect(matmulConfigFor(forced)).toEqual({ ...HARDWARE_MATMUL_CONFIG });
    expect(() => expectLoopBudget('op', forced, 70000, 'x')).toThrow(/op: x needs about 70000 loop iterations per GPU thread, over llvmpipe's limit of 65535/);
    expect(() => expectLoopBudget('op', ctxOf('hardware', 'software'), 1e9, 'x')).not.toThrow();
    expect(() => expectLoopBudget('op', ctxOf('swiftshader'), 1e9, 'x')).not.toThrow();
  });

  it('matmul: register tiles on the software tuning, read through textures where the adapter wants them', () => {
    expect(matmulConfigFor(ctxOf('llvmpipe'))).toEqual({ kernel: 'register', tm: 16, tn: 8, wgX: 8, wgY: 1, bk: 16, reads: 'texture' });
    expect(matmulConfigFor(ctxOf('llvmpipe'), { M: 256, N: 256, K: 64 })).toEqual({ kernel: 'register', tm: 16, tn: 16, wgX: 8, wgY: 1, bk: 16, reads: 'texture' });
    expect(matmulConfigFor(ctxOf('swiftshader'))).toEqual({ kernel: 'register', tm: 16, tn: 8, wgX: 8, wgY: 1, bk: 16 });
    expect(matmulConfigFor(ctxOf('hardware', 'software'))).toEqual({ kernel: 'register', tm: 16, tn: 8, wgX: 8, wgY: 1, bk: 16 });
    expect(matmulConfigFor(ctxOf('hardware'))).toEqual({ ...HARDWARE_MATMUL_CONFIG });
    // Each call gets its own object: a caller may change it.
    const a = matmulConfigFor(ctxOf('hardware'));
    a.tm = 1;
    expect(matmulConfigFor(ctxOf('hardware')).tm).toBe(4);
  });

  it('policy loss layouts and widths by tuning', () => {
    const rows = (v: number) => 2 * (Math.floor(v / 4) + (v % 4));
    expect(SOFTWARE_TUNINGS.policyLossLayout(50257, rows(50257), true)).toBe('rows'); // read through textures: any V
    expect(SOFTWARE_TUNINGS.policyLossLayout(50257, rows(50257), false)).toBe('groups');
    expect(SOFTWARE_TUNINGS.policyLossLayout(50256, rows(50256), false)).toBe('rows');
    expect(SOFTWARE_TUNINGS.policyLossLayout(140000, rows(140000), true)).toBe('groups'); // past llvmpipe's loop limit
    expect(GPU_TUNINGS.policyLossLayout(256, rows(256), true)).toBe('groups');
    expect([SOFTWARE_TUNINGS.reductionWidth, GPU_TUNINGS.reductionWidth]).toEqual([16, 256]);
    expect([SOFTWARE_TUNINGS.rowWorkgroupSize(1024), SOFTWARE_TUNINGS.rowWorkgroupSize(1025), GPU_TUNINGS.rowWorkgroupSize(64)]).toEqual([16, 256, 128]);
    expect([SOFTWARE_TUNINGS.sampleWorkgroupSize(100), SOFTWARE_TUNINGS.sampleWorkgroupSize(50257), GPU_TUNINGS.sampleWorkgroupSize(100)]).toEqual([16, 256, 256]);
  });
});
