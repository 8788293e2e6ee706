// Deno suite: KV cache cases (append with fused RoPE, extend/advance, KvCache) on Deno's WebGPU (Mesa llvmpipe here).
import { kvCacheCases } from '../shared/cases/kv_cache.ts';
import { registerCases } from '../shared/register.ts';

registerCases(kvCacheCases);
