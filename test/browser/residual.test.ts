// Chromium suite: residual add-and-scale cases on SwiftShader.
import { it } from 'vitest';
import { residualCases } from '../shared/cases/residual.ts';
import { registerCases } from '../shared/register.ts';

registerCases(residualCases, it);
