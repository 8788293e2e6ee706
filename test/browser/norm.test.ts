// Chromium suite: LayerNorm and RMSNorm cases on SwiftShader.
import { it } from 'vitest';
import { normCases } from '../shared/cases/norm.ts';
import { registerCases } from '../shared/register.ts';

registerCases(normCases, it);
