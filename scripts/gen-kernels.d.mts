// Types of scripts/gen-kernels.mjs for the TypeScript tests that import it.
/** The type variants a kernel source declares with `// @variant` lines: [name, source] pairs. */
export function variantsOf(file: string, src: string): [string, string][];
/** Every kernel bundled from `dir`: the .wgsl files by name, then their variants, sorted by name. */
export function bundle(dir: string): Map<string, string>;
