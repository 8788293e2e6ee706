// Deno suite: tensors over the binding limit, bound a range at a time (Mesa llvmpipe here).
import { bindingSplitCases } from '../shared/cases/binding_split.ts';
import { registerCases } from '../shared/register.ts';

registerCases(bindingSplitCases);
