// Chromium suite: policy loss and value loss cases on SwiftShader.
import { it } from 'vitest';
import { policyLossCases, valueLossCases } from '../shared/cases/policy_loss.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...policyLossCases, ...valueLossCases], it);
