/**
 * The model layer's host-side, GPU-free parts: configs and presets, canonical parameters,
 * memory estimates, weights I/O (safetensors, Hugging Face checkpoints, PEFT adapters),
 * from-scratch initialization, and the Hugging Face tokenizer. The GPU engine builds on these.
 */
export { LORA_TARGETS, loraScale, loraTargetDims, validateConfig, validateLora } from './config.ts';
export type { LayerType, LoraConfig, LoraTarget, ModelConfig, ModelFamily, RopeScaling } from './config.ts';
export { ARCHS, type ArchRecord, archOf } from './arch.ts';
export { ModelConfigError, SafetensorsError, WeightsError } from './errors.ts';
export type { SafetensorsErrorKind, WeightsErrorKind } from './errors.ts';
export { PRESETS, preset } from './presets.ts';
export type { PresetName } from './presets.ts';
export { blockLinears, countLoraParameters, countParameters, loraSpecs, moduleName, numel, parameterSpecs } from './params.ts';
export type { ParamKind, ParamOptions, ParamSpec } from './params.ts';
export { adapterMemoryDevice, estimateTrainingMemory, largestBaseBuffer, trainingMemoryDevice } from './memory.ts';
export type { BufferNeed, TrainingMemoryDevice, TrainingMemoryEstimate, TrainingMemoryOptions } from './memory.ts';
export { configFromHf, configToHf, HF_MODEL_TYPES } from './hf_config.ts';
export type { HfConfigOptions } from './hf_config.ts';
export { BlobSource, fetchBytes, MemorySource, openByteSource, readText } from './bytes.ts';
export type { ByteInput, ByteSource, OpenOptions } from './bytes.ts';
export { DTYPE_BITS, DTYPE_BYTES, FLOAT_DTYPES, MAX_HEADER_BYTES, openSafetensors, SafetensorsFile, tensorByteSize } from './safetensors.ts';
export type { TensorInfo } from './safetensors.ts';
export { writeSafetensors } from './safetensors_write.ts';
export type { TensorToWrite, WriteOptions } from './safetensors_write.ts';
export { bf16ToF32Array, f16BitsToF32, f16ToF32Array, f32ToF16Array, f32ToF16Bits } from './f16.ts';
export {
  checkParams, exportHfWeights, hfEntries, importHfWeights, planHfImport, plainSource, readHfImport, shardedSource,
} from './weight_names.ts';
export type { HfEntry, HfImportPlan, PlainTensor, TensorSource } from './weight_names.ts';
export { checkLoraTensors, exportPeftAdapter, importPeftAdapter, mergeLora, peftModule } from './peft.ts';
export type { PeftAdapter } from './peft.ts';
export { INIT_STD, initLora, initParameters } from './init.ts';
export { HfTokenizer, loadHfTokenizer } from './tokenizer/hf.ts';
export type { ChatMessage, ChatTemplateOptions } from './tokenizer/hf.ts';
