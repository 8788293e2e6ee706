// Chromium suite: tensors over the binding limit, bound a range at a time (SwiftShader).
import { it } from 'vitest';
import { bindingSplitCases } from '../shared/cases/binding_split.ts';
import { registerCases } from '../shared/register.ts';

registerCases(bindingSplitCases, it);
