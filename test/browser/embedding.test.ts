// Chromium suite: embedding lookup and scatter-add backward cases on SwiftShader.
import { it } from 'vitest';
import { embeddingCases } from '../shared/cases/embedding.ts';
import { registerCases } from '../shared/register.ts';

registerCases(embeddingCases, it);
