/**
 * Our side of each benchmark: an adapter per op from src/ops/, added as each op lands.
 * A benchmark without an entry is reported as "op not implemented yet".
 */
import type { BenchName } from './cases.ts';
import type { OurAdapter } from './ours.ts';

export const OUR_OPS: Partial<Record<BenchName, OurAdapter>> = {};
