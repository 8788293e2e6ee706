// Chromium suite: GELU and SwiGLU cases on SwiftShader.
import { it } from 'vitest';
import { activationCases } from '../shared/cases/activation.ts';
import { registerCases } from '../shared/register.ts';

registerCases(activationCases, it);
