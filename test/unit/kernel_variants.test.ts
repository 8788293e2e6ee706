// Type variants of kernels (scripts/gen-kernels.mjs): `// @variant` lines turn one f32 WGSL
// source into its f16-storage twin by alias substitution, keeping line numbers; bad variant lines
// stop the build; the bundled f16 kernels come from their f32 files, not from copies.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundle, variantsOf } from '../../scripts/gen-kernels.mjs';

const SRC = [
  '// k.wgsl — a test kernel',
  '// @variant k_f16: enable f16; Store = f16; Store4 = vec4<f16>',
  'alias Store = f32;',
  'alias Store4 = vec4<f32>;',
  '@group(0) @binding(0) var<storage, read> x: array<Store>;',
  'fn at(i: u32) -> f32 { return f32(x[i]); }',
].join('\n');

describe('kernel type variants', () => {
  it('substitutes the named aliases and puts the enable directive on line 1', () => {
    const [[name, src]] = variantsOf('k.wgsl', SRC);
    expect(name).toBe('k_f16');
    const lines = src.split('\n');
    expect(lines.length).toBe(SRC.split('\n').length);
    expect(lines[0]).toBe('enable f16; // k.wgsl — a test kernel');
    expect(lines[2]).toBe('alias Store = f16;');
    expect(lines[3]).toBe('alias Store4 = vec4<f16>;');
    expect(lines.slice(4)).toEqual(SRC.split('\n').slice(4));
  });

  it('a source without @variant lines has no variants', () => {
    expect(variantsOf('plain.wgsl', 'alias Store = f32;\n')).toEqual([]);
  });

  it('refuses a missing or repeated alias and an unreadable item, naming the file and variant', () => {
    expect(() => variantsOf('k.wgsl', SRC.replace('alias Store4 = vec4<f32>;', ''))).toThrow(/k\.wgsl: @variant k_f16: "alias Store4 = \.\.\.;" must be declared once .*found 0/);
    expect(() => variantsOf('k.wgsl', `${SRC}\nalias Store = f32;`)).toThrow(/"alias Store = \.\.\.;" must be declared once .*found 2/);
    expect(() => variantsOf('k.wgsl', SRC.replace('Store = f16', 'Store f16'))).toThrow(/k\.wgsl: @variant k_f16: cannot read "Store f16"/);
  });

  it('bundles matmul_f16 and embedding_f16 from their f32 sources (no hand-kept copies)', () => {
    const dir = join(import.meta.dirname, '..', '..', 'kernels');
    const all = bundle(dir);
    for (const [variant, base, aliases] of [['matmul_f16', 'matmul', ['BStore', 'BStore4']], ['embedding_f16', 'embedding', ['TableStore']]] as const) {
      expect(existsSync(join(dir, `${variant}.wgsl`)), `${variant}.wgsl must not exist`).toBe(false);
      const v = all.get(variant)!.split('\n');
      const b = all.get(base)!.split('\n');
      expect(v.length).toBe(b.length);
      expect(v[0]).toBe(`enable f16; ${b[0]}`);
      // Every other line is the f32 source's, except the substituted alias declarations.
      const differ = v.map((line, i) => (i > 0 && line !== b[i] ? line : null)).filter((x) => x !== null);
      expect(differ.map((l) => /^alias (\w+) = /.exec(l!)?.[1])).toEqual([...aliases]);
      expect(differ.every((l) => /f16/.test(l!))).toBe(true);
    }
  });
});
