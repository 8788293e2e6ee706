// Chromium suite: the engine against the Hugging Face transformers goldens (test/goldens/, fetched from the Vite server; SwiftShader).
import { it } from 'vitest';
import { goldenCases } from '../shared/cases/goldens.ts';
import { registerCases } from '../shared/register.ts';

registerCases(goldenCases, it);
