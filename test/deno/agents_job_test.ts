import { agentsJobCases } from '../shared/cases/agents_job.ts';
import { registerCases } from '../shared/register.ts';

registerCases(agentsJobCases);
