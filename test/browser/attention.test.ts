// Chromium suite: attention (forward, backward, decode) and RoPE cases on SwiftShader.
import { it } from 'vitest';
import { attentionCases } from '../shared/cases/attention.ts';
import { ropeCases } from '../shared/cases/rope.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...attentionCases, ...ropeCases], it);
