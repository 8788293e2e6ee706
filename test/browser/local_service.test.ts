import { it } from 'vitest';
import { localServiceCases } from '../shared/cases/local_service.ts';
import { registerCases } from '../shared/register.ts';

registerCases(localServiceCases, it);
