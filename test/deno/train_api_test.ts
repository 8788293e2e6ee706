import { trainApiCases } from '../shared/cases/train_api.ts';
import { registerCases } from '../shared/register.ts';

registerCases(trainApiCases);
