// Chromium suite: policy loss and value loss cases on SwiftShader, and the large-vocabulary cases.
import { it } from 'vitest';
import { largeVocabLossCases } from '../shared/cases/large_vocab.ts';
import { policyLossCases, valueLossCases } from '../shared/cases/policy_loss.ts';
import { registerCases } from '../shared/register.ts';

registerCases([...policyLossCases, ...valueLossCases, ...largeVocabLossCases], it);
