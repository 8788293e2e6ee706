// Types of scripts/gen-kernels.mjs for the TypeScript tests that import it.
/** The type variants a kernel source declares with `// @variant` lines: [name, source] pairs. */
export function variantsOf(file: string, src: string): [string, string][];
/** The kernel source with its `// @copy-begin` … `// @copy-end` regions appended as renamed copies. */
export function withCopies(file: string, src: string): string;
/** Every kernel bundled from `dir`: the .wgsl files by name (with their copies), then their variants, sorted by name. */
export function bundle(dir: string): Map<string, string>;
