// Chromium suite: KV cache cases (append with fused RoPE, extend/advance, KvCache) on SwiftShader.
import { it } from 'vitest';
import { kvCacheCases } from '../shared/cases/kv_cache.ts';
import { registerCases } from '../shared/register.ts';

registerCases(kvCacheCases, it);
