// Chromium suite: matmul cases on SwiftShader (no shader-f16: the f16 case checks nothing there).
import { it } from 'vitest';
import { matmulCases } from '../shared/cases/matmul.ts';
import { reportErrors } from '../shared/cases/helpers.ts';
import { registerCases } from '../shared/register.ts';

registerCases(matmulCases, it);
it('matmul: largest errors (report)', async () => reportErrors('matmul (chromium)'));
