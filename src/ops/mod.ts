/**
 * The `ops` namespace of the public API (src/mod.ts): the host wrapper of every WGSL kernel in
 * kernels/, for custom models and benchmarks. Each records its dispatches on a Recorder (`gpu`
 * namespace), says in its doc comment whether it writes (=) or accumulates (+=), and refuses bad
 * input before recording — a ShapeError naming the op and the tensor, a LimitError past a device
 * limit. Every wrapper has a plain TypeScript reference beside it (src/ops/<name>.ref.ts).
 */
export { adamw, adamwBiasCorrection, clipScale } from './adamw.ts';
export type { AdamWOptions } from './adamw.ts';
export { attentionBackward, attentionDecode, attentionDecodeSplits, attentionForward, attentionTuning, attentionWorkShape } from './attention.ts';
export type { AttentionDecodeOptions, AttentionOptions, AttentionTuning } from './attention.ts';
export { embeddingBackward, embeddingForward, embeddingScratchSize } from './embedding.ts';
export type { EmbeddingBackwardOptions, PositionEmbedding } from './embedding.ts';
export { geluBackward, geluForward } from './gelu.ts';
export { kvAdvance, kvAppend, kvExtend } from './kv_cache.ts';
export type { DecodeState, KvAppendOptions, SampledStep } from './kv_cache.ts';
export { layernormBackward, layernormForward, layernormScratchSize } from './layernorm.ts';
export type { NormBackwardOptions } from './layernorm.ts';
export { LORA_MAX_RANK, loraLinearBackward, loraLinearForward } from './lora_linear.ts';
export type { LoraLinearBackwardOptions, LoraLinearOptions } from './lora_linear.ts';
export { HARDWARE_MATMUL_CONFIG, matmul, matmulConfigFor, planMatmul, recordMatmul } from './matmul.ts';
export type { LowRankTerm, MatmulConfig, MatmulOptions, MatmulPlan } from './matmul.ts';
export { matrixBlock } from './matmul_split.ts';
export type { MatmulOperand, MatrixBlock } from './matmul_split.ts';
export { POLICY_STATS, policyLoss, policyLossScratchSize } from './policy_loss.ts';
export type { PolicyLossInputs, PolicyLossOutputs } from './policy_loss.ts';
export { globalL2Norm, reduceScratchSize, sumAll, sumRows } from './reduce.ts';
export { residualAdd, residualAddInPlace, scaleInPlace } from './residual.ts';
export { rmsnormBackward, rmsnormForward, rmsnormScratchSize } from './rmsnorm.ts';
export type { RmsnormOptions } from './rmsnorm.ts';
export { ropeBackward, ropeForward, ropeInvFreq } from './rope.ts';
export type { RopeOptions } from './rope.ts';
export { sample } from './sample.ts';
export type { SampleOptions } from './sample.ts';
export { softmaxBackward, softmaxForward } from './softmax.ts';
export { swigluBackward, swigluForward } from './swiglu.ts';
export type { GateActivation, GatedOptions } from './swiglu.ts';
export { VALUE_STATS, valueLoss } from './value_loss.ts';
export type { ValueLossInputs, ValueLossOutputs } from './value_loss.ts';
export { vocabBitmask, vocabMask } from './vocab_mask.ts';
export type { VocabMask } from './vocab_mask.ts';
