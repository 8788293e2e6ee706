// Bundles kernels/*.wgsl (the one source of truth) into src/gpu/wgsl.gen.ts, a TypeScript module
// that the browser, Workers, Deno and the built package all import — no fetch at run time.
// The output is git-ignored and rewritten only when its content changes. Run by every npm and
// Deno task that needs it (test, build, train, bench).
//
// Type variants: a kernel written once for f32 storage can name a variant that differs only in
// storage types (e.g. frozen weights in f16), instead of a second hand-kept copy of the file:
//
//   // @variant matmul_f16: enable f16; BStore = f16; BStore4 = vec4<f16>
//   alias BStore = f32;
//   alias BStore4 = vec4<f32>;
//
// bundles `matmul_f16` as well: the same source with each named `alias X = ...;` declaration set
// to the given type and the `enable` directives put at the start of line 1 (so compiler messages
// keep the source's line numbers). The file itself stays valid WGSL, and is the f32 kernel. An
// alias that is missing or declared twice, a variant name that is already a file, or a malformed
// @variant line stops the build.
//
// Entry-point copies: where an entry point needs a twin that differs only in how it loads its
// operands (matmul's main_tex reads A and B through textures), the lines between
//
//   // @copy-begin _tex: a_at = a_tex_at; b4_at = b4_tex_at
//   ... fn panel_b(...) { ... b4_at(...) ... }  @compute fn main(...) { ... panel_b(...) ... }
//   // @copy-end _tex
//
// are bundled a second time, appended to the kernel (its own lines keep their numbers), with every
// function they declare renamed with the suffix (main → main_tex, panel_b → panel_b_tex) and each
// named function replaced by its twin, identifier by identifier (comments included). The file
// itself stays valid WGSL without the copy. A replaced name that the lines do not use, a twin or
// a renamed function that the kernel does not declare or already declares, a region without a
// @compute entry point, and unmatched or malformed markers stop the build. Copies are made before
// the type variants, so a variant has them too.
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const VARIANT = /^\/\/ @variant ([A-Za-z_][A-Za-z0-9_]*):(.*)$/gm;

/** The variants a kernel source declares: [[name, source], ...]. */
export function variantsOf(file, src) {
  const out = [];
  for (const [, name, body] of src.matchAll(VARIANT)) {
    const enables = [];
    let text = src;
    for (const item of body.split(';').map((s) => s.trim()).filter(Boolean)) {
      const en = /^enable ([a-z0-9_]+)$/.exec(item);
      if (en) {
        enables.push(`enable ${en[1]};`);
        continue;
      }
      const sub = /^([A-Za-z_][A-Za-z0-9_]*) = ([^;=]+)$/.exec(item);
      if (!sub) throw new Error(`${file}: @variant ${name}: cannot read "${item}" (want "enable EXT" or "Alias = type")`);
      const decl = new RegExp(`^alias ${sub[1]} = [^;]+;`, 'gm');
      const found = text.match(decl)?.length ?? 0;
      if (found !== 1) throw new Error(`${file}: @variant ${name}: "alias ${sub[1]} = ...;" must be declared once at the start of a line, found ${found}`);
      text = text.replace(decl, `alias ${sub[1]} = ${sub[2].trim()};`);
    }
    if (enables.length > 0) text = `${enables.join(' ')} ${text}`;
    out.push([name, text]);
  }
  return out;
}

const COPY_BEGIN = /^\/\/ @copy-begin\b(.*)$/;
const COPY_END = /^\/\/ @copy-end\b(.*)$/;
const IDENT = /\b[A-Za-z_][A-Za-z0-9_]*\b/g;

/** The functions a WGSL text declares (`fn name` at the start of a line). */
const declared = (text) => new Set([...text.matchAll(/^fn ([A-Za-z_][A-Za-z0-9_]*)\b/gm)].map((m) => m[1]));

/** The kernel source with its @copy-begin … @copy-end regions appended as renamed copies (see the header). */
export function withCopies(file, src) {
  const lines = src.split('\n');
  const copies = [];
  for (let i = 0; i < lines.length; i++) {
    if (COPY_END.test(lines[i])) throw new Error(`${file}:${i + 1}: @copy-end without a @copy-begin`);
    const begin = COPY_BEGIN.exec(lines[i]);
    if (!begin) continue;
    const head = /^ (_[A-Za-z0-9_]+):(.*)$/.exec(begin[1]);
    if (!head) throw new Error(`${file}:${i + 1}: cannot read "${lines[i]}" (want "// @copy-begin _suffix: name = twin; ...")`);
    const [, suffix, body] = head;
    const end = lines.findIndex((l, j) => j > i && (COPY_END.test(l) || COPY_BEGIN.test(l)));
    if (end < 0 || COPY_BEGIN.test(lines[end]) || COPY_END.exec(lines[end])[1].trim() !== suffix) {
      throw new Error(`${file}:${i + 1}: @copy-begin ${suffix} needs its "// @copy-end ${suffix}" before any other @copy-begin`);
    }
    const region = lines.slice(i + 1, end).join('\n');
    const where = `${file}:${i + 1}: @copy-begin ${suffix}`;
    const all = declared(src);
    const used = new Set(region.match(IDENT) ?? []);
    const names = new Map();
    for (const fn of declared(region)) {
      if (all.has(fn + suffix)) throw new Error(`${where}: ${fn}${suffix} is declared already`);
      names.set(fn, fn + suffix);
    }
    if (!/^@compute\b/m.test(region)) throw new Error(`${where}: the lines declare no @compute entry point`);
    for (const item of body.split(';').map((x) => x.trim()).filter(Boolean)) {
      const sub = /^([A-Za-z_][A-Za-z0-9_]*) = ([A-Za-z_][A-Za-z0-9_]*)$/.exec(item);
      if (!sub) throw new Error(`${where}: cannot read "${item}" (want "name = twin")`);
      const [, from, to] = sub;
      if (!used.has(from)) throw new Error(`${where}: ${from} is not used between the markers`);
      if (names.has(from)) throw new Error(`${where}: ${from} is declared between the markers (it is renamed ${from}${suffix} already)`);
      if (!all.has(from) || !all.has(to)) throw new Error(`${where}: ${all.has(from) ? to : from} is not a function of the kernel`);
      names.set(from, to);
    }
    if (names.size === declared(region).size) throw new Error(`${where}: names no function to replace`);
    copies.push(`// ---- generated by scripts/gen-kernels.mjs from lines ${i + 2}–${end} (@copy-begin ${suffix}); edit those ----\n` +
      region.replace(IDENT, (id) => names.get(id) ?? id));
    i = end;
  }
  return copies.length === 0 ? src : `${src.replace(/\n*$/, '\n')}\n${copies.join('\n\n')}\n`;
}

/** Every bundled kernel: the files by name (with their copies), then their variants. */
export function bundle(dir) {
  const files = readdirSync(dir).filter((f) => f.endsWith('.wgsl')).sort();
  const sources = new Map(files.map((f) => [f.slice(0, -5), withCopies(f, readFileSync(join(dir, f), 'utf8'))]));
  const all = new Map(sources);
  for (const [name, src] of sources) {
    for (const [vname, vsrc] of variantsOf(`${name}.wgsl`, src)) {
      if (all.has(vname)) throw new Error(`${name}.wgsl: @variant ${vname} is already a kernel (kernels/${vname}.wgsl or another variant)`);
      all.set(vname, vsrc);
    }
  }
  return new Map([...all.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const self = fileURLToPath(import.meta.url);
const root = join(dirname(self), '..');
// Run as a script (`node scripts/gen-kernels.mjs`): write the bundle. Imported (the unit test): only the functions.
if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(self)) {
  const entries = [...bundle(join(root, 'kernels'))].map(([name, src]) => `  ${JSON.stringify(name)}: ${JSON.stringify(src)},`);
  const text = `// GENERATED by scripts/gen-kernels.mjs from kernels/*.wgsl — do not edit; edit the .wgsl files.
export const WGSL_SOURCES: Readonly<Record<string, string>> = {
${entries.join('\n')}
};
`;
  const out = join(root, 'src', 'gpu', 'wgsl.gen.ts');
  if (!existsSync(out) || readFileSync(out, 'utf8') !== text) writeFileSync(out, text);
}
