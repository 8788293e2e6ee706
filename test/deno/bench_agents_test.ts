import { benchAgentsCases } from '../shared/cases/bench_agents.ts';
import { registerCases } from '../shared/register.ts';

registerCases(benchAgentsCases);
