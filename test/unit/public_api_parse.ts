/**
 * A reader of the flat export lists the public API is written in (src/mod.ts and the namespace
 * modules): `export { a, type B, c as d } from '...'`, `export type { ... } from '...'` and
 * `export * as ns from '...'`. Types do not exist at run time, so the tests read them from the
 * source; the value names it reads are checked against the module's real exports.
 */
export interface ExportList {
  readonly values: Set<string>;
  readonly types: Set<string>;
  /** Namespace name → the module path as written. */
  readonly namespaces: Map<string, string>;
}

export function parseExports(source: string): ExportList {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const values = new Set<string>();
  const types = new Set<string>();
  const namespaces = new Map<string, string>();
  for (const m of text.matchAll(/export\s+(type\s+)?\{([^}]*)\}/g)) {
    for (const raw of m[2].split(',')) {
      const item = raw.trim();
      if (!item) continue;
      const typeOnly = Boolean(m[1]) || item.startsWith('type ');
      const name = item.replace(/^type\s+/, '').split(/\s+as\s+/).pop()!.trim();
      (typeOnly ? types : values).add(name);
    }
  }
  for (const m of text.matchAll(/export\s+\*\s+as\s+(\w+)\s+from\s+'([^']+)'/g)) namespaces.set(m[1], m[2]);
  for (const m of text.matchAll(/export\s+(?:async\s+)?(function|const|class|interface|type)\s+(\w+)/g)) {
    (m[1] === 'interface' || m[1] === 'type' ? types : values).add(m[2]);
  }
  return { values, types, namespaces };
}

/** Every name an export list makes visible (values, types and namespaces). */
export function allNames(e: ExportList): Set<string> {
  return new Set([...e.values, ...e.types, ...e.namespaces.keys()]);
}
