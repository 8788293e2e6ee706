import { rlJobCases } from '../shared/cases/rl_job.ts';
import { registerCases } from '../shared/register.ts';

registerCases(rlJobCases);
