// Chromium suite: attention (forward, backward, decode; sliding windows, D up to 256) and RoPE cases on SwiftShader.
import { it } from 'vitest';
import { attentionCases } from '../shared/cases/attention.ts';
import { attentionWindowCases } from '../shared/cases/attention_window.ts';
import { ropeCases } from '../shared/cases/rope.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...attentionCases, ...attentionWindowCases, ...ropeCases], it);
