/**
 * The `engine` namespace of the public API (src/mod.ts): the transformer on the GPU — base
 * weights, LoRA adapters, the trainer, generation and the engine's sampling function — and the
 * model layer's parts that code building on it needs: architecture records, canonical parameters,
 * initialization, memory estimates, the byte sources and tensor tables behind weights I/O.
 *
 * What loading and saving a model takes (presets, configs, Hugging Face / PEFT / safetensors I/O,
 * the Hugging Face tokenizer, their errors) is at the package's top level instead, so each name has
 * one place (test/unit/public_api.test.ts checks that no name is in both).
 */
export { LORA_TARGETS, loraScale, loraTargetDims, validateConfig, validateLora } from './config.ts';
export type { LayerType, ModelFamily, RopeScaling } from './config.ts';
export { ARCHS, type ArchRecord, archOf } from './arch.ts';
export { blockLinears, countLoraParameters, countParameters, loraSpecs, moduleName, parameterSpecs } from './params.ts';
export { outputCeiling, type OutputCeilingOptions } from './output_ceiling.ts';
export type { ParamKind, ParamOptions, ParamSpec } from './params.ts';
export { adapterMemoryDevice, estimateTrainingMemory, largestBaseBuffer, trainingMemoryDevice } from './memory.ts';
export type { BufferNeed, TrainingMemoryDevice, TrainingMemoryEstimate, TrainingMemoryOptions } from './memory.ts';
export { HF_MODEL_TYPES } from './hf_config.ts';
export type { HfConfigOptions } from './hf_config.ts';
export { BlobSource, fetchBytes, MemorySource, openByteSource, readText } from './bytes.ts';
export type { ByteInput, ByteSource, OpenOptions } from './bytes.ts';
export { DTYPE_BITS, FLOAT_DTYPES, MAX_HEADER_BYTES, SafetensorsFile, tensorByteSize } from './safetensors.ts';
export type { TensorInfo } from './safetensors.ts';
export type { TensorToWrite, WriteOptions } from './safetensors_write.ts';
export { bf16ToF32Array, f16BitsToF32, f16ToF32Array, f32ToF16Array, f32ToF16Bits } from './f16.ts';
export { checkParams, hfEntries, planHfImport, plainSource, readHfImport, shardedSource } from './weight_names.ts';
export type { HfEntry, HfImportPlan, PlainTensor, TensorSource } from './weight_names.ts';
export { checkLoraTensors, mergeLora, peftModule } from './peft.ts';
export { INIT_STD, initLora, initParameters } from './init.ts';
export type { ChatTemplateOptions } from './tokenizer/hf.ts';

// The GPU engine: base weights, adapters, training, generation, sampling.
export { BaseModel } from './base_model.ts';
export type { BaseModelOptions } from './base_model.ts';
export { LoraAdapter } from './lora.ts';
export type { LoraAdapterOptions } from './lora.ts';
export type { AdapterWeights, LoraModule, ModelWeights } from './weights_view.ts';
export { Trainer } from './trainer.ts';
export type { StepStats, TrainerOptions } from './trainer.ts';
export type { OptimizerState } from './optimizer.ts';
export { generate } from './generate.ts';
export type { FinishReason, GenerateOptions, GenerateResult } from './generate.ts';
export { engineSampleFn, tokenizerVocabMask } from './sample_fn.ts';
export type { EngineSampleFnOptions } from './sample_fn.ts';
