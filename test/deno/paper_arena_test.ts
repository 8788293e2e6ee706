import { paperArenaCases } from '../shared/cases/paper_arena.ts';
import { registerCases } from '../shared/register.ts';

registerCases(paperArenaCases);
