/**
 * Loading pretrained checkpoints: from a Hugging Face Hub repo id or a local folder, through the
 * Hugging Face cache folder (Deno/Node, shared with Python) or Cache Storage (browsers).
 */
export { HubError } from './errors.ts';
export type { HubErrorKind } from './errors.ts';
export { hubCacheFor, loadPretrained } from './pretrained.ts';
export type { HubProgress, LoadPretrainedOptions, Pretrained } from './pretrained.ts';
export type { GenerationConfig } from './generation_config.ts';
export type { CachedModel, HubCache } from './cache.ts';
export type { CacheOptions } from './list.ts';
export { BrowserHubCache } from './browser_cache.ts';
export { deleteCachedModel, listCachedModels } from './list.ts';
