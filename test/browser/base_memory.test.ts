// Chromium suite: a base's kept weight texture copies (none under SwiftShader: both figures 0).
import { it } from 'vitest';
import { baseMemoryCases } from '../shared/cases/base_memory.ts';

for (const c of baseMemoryCases) it(c.name, c.fn);
