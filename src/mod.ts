/**
 * webtinker — the public API. Named exports only; everything else is internal.
 *
 * Layers (see DESIGN.md): environments & agents (src/env), algorithms (src/algorithms),
 * runtime (src/runtime), engine (src/model, src/ops, src/gpu, kernels/).
 */
export {
  ConfigError,
  GpuValidationError,
  KernelCompileError,
  LimitError,
  NonFiniteError,
  ReleasedError,
  ShapeError,
  WebGpuUnavailableError,
  WebtinkerError,
} from './errors.ts';
export {
  acquireGpu,
  BufferPool,
  bundledKernelNames,
  emptyTensor,
  GpuContext,
  KernelProfiler,
  Params,
  readTensor,
  Recorder,
  Tensor,
  tensorFrom,
  zerosTensor,
} from './gpu/mod.ts';
export type { AdapterSummary, DeviceLostEvent, DispatchSpec, DType, KernelTime, PoolStats, SubmitResult } from './gpu/mod.ts';

// Runtime: scheduler, GPU worker client, stores.
export { Scheduler } from './runtime/scheduler.ts';
export type { JobKind, JobSpec, JobState, JobStats, PriorityClass, SchedulerEvent } from './runtime/scheduler.ts';
export { AdmissionError, JobCancelledError, JobStateError } from './runtime/errors.ts';
export type { AdmissionNumbers } from './runtime/errors.ts';
export { GpuClient, WorkerCrashedError } from './runtime/gpu_client.ts';
export type { GpuClientEvent, GpuClientOptions } from './runtime/gpu_client.ts';
export type { AdapterStoreSpec, GpuWorkerApi, WorkerEvent, WorkerInitOptions } from './runtime/protocol.ts';
export {
  AdapterStore,
  CheckpointStore,
  defaultKv,
  IdbKv,
  MemoryKv,
  StoreCorruptError,
  StoreError,
  StoreNotFoundError,
  StoreQuotaError,
} from './runtime/store/mod.ts';
export type { AdapterInfo, AdapterMeta, AdapterTensor, CheckpointMeta, KvStore } from './runtime/store/mod.ts';
export { Rng } from './util/rng.ts';
export type { RngState } from './util/rng.ts';

// Agents and environments (src/env): the Gym-like contract, the agent, rollout protocols, built-ins.
export type {
  Demonstration,
  DroppedEpisode,
  EndReason,
  Environment,
  EnvSpec,
  RolloutBatch,
  RolloutMetrics,
  SampleFn,
  SampleRequest,
  SampleResult,
  StepResult,
  Tool,
  Trajectory,
  TrajectoryGroup,
  TurnBasedEnvironment,
  TurnBasedEnvSpec,
} from './env/mod.ts';
export {
  Agent,
  ArithmeticError,
  ByteTokenizer,
  calculatorEnv,
  chatFormat,
  EnvironmentError,
  extractAnswer,
  generationEosIds,
  guessNumberEnv,
  hermesToolSyntax,
  hfChatFormat,
  llamaToolSyntax,
  tagToolSyntax,
  InvalidInputError,
  nimEnv,
  nimRandomPolicy,
  parseAction,
  plainFormat,
  replayDemonstrations,
  replayTurnBasedDemonstrations,
  rolloutGroups,
  rolloutMultiTurn,
  rolloutSingleTurn,
  rolloutTurnBased,
  ACTION_STOP_STRINGS,
  groupEpisodes,
  SampleContractError,
  TokenizerError,
} from './env/mod.ts';
export type { AgentOptions, EpisodeSpec, GameResult, HfChatFormatOptions, ParsedAction, PromptFormat, Tokenizer, ToolCallSyntax } from './env/mod.ts';

// Algorithms (src/algorithms): pure functions from trajectories to datums and loss specs.
export {
  clippedValueLoss,
  crossEntropyLoss,
  dpoDatums,
  dpoLoss,
  dpoPairLoss,
  dpoPairsFromGroups,
  gae,
  groupRelativeAdvantages,
  grpoDatums,
  grpoLoss,
  importanceSamplingLoss,
  packDatums,
  policyLossReference,
  ppoDatums,
  ppoLoss,
  reinforceAdvantages,
  reinforceDatums,
  rlooAdvantages,
  rlooDatums,
  sftDatums,
  trajectoryToDatum,
  valueLossSpec,
} from './algorithms/mod.ts';
export type { Aggregation, Datum, LossSpec, PackedBatch, PackedStep } from './algorithms/mod.ts';

// Models (src/model): configs, presets, weights I/O, PEFT, tokenizers, initialization.
export {
  adapterMemoryDevice,
  configFromHf,
  configToHf,
  countParameters,
  estimateTrainingMemory,
  trainingMemoryDevice,
  exportHfWeights,
  exportPeftAdapter,
  importHfWeights,
  importPeftAdapter,
  initLora,
  initParameters,
  loraSpecs,
  loadHfTokenizer,
  HfTokenizer,
  mergeLora,
  ModelConfigError,
  openSafetensors,
  parameterSpecs,
  preset,
  PRESETS,
  SafetensorsError,
  validateConfig,
  validateLora,
  WeightsError,
  writeSafetensors,
} from './model/mod.ts';
export type { LoraConfig, LoraTarget, ModelConfig, PresetName } from './model/mod.ts';
export type { AdapterWeights, LoraModule, ModelWeights } from './model/weights_view.ts';

// Pretrained checkpoints (src/hub): a Hub repo id or a folder → config, weights, tokenizer; the HF cache.
export { BrowserHubCache, deleteCachedModel, HubError, listCachedModels, loadPretrained } from './hub/mod.ts';
export type { CachedModel, CacheOptions, GenerationConfig, HubCache, HubErrorKind, HubProgress, LoadPretrainedOptions, Pretrained } from './hub/mod.ts';

// Kernels' host wrappers (src/ops), for custom models and benchmarks.
export { add } from './ops/add.ts';
export { adamw, adamwBiasCorrection, clipScale } from './ops/adamw.ts';
export type { AdamWOptions } from './ops/adamw.ts';
export { attentionBackward, attentionDecode, attentionDecodeSplits, attentionForward, attentionTuning, attentionWorkShape } from './ops/attention.ts';
export type { AttentionDecodeOptions, AttentionOptions, AttentionTuning } from './ops/attention.ts';
export { embeddingBackward, embeddingForward, embeddingScratchSize } from './ops/embedding.ts';
export { geluBackward, geluForward } from './ops/gelu.ts';
export { layernormBackward, layernormForward, layernormScratchSize } from './ops/layernorm.ts';
export { policyLoss, policyLossScratchSize, POLICY_STATS } from './ops/policy_loss.ts';
export type { PolicyLossInputs, PolicyLossOutputs } from './ops/policy_loss.ts';
export { globalL2Norm, reduceScratchSize, sumAll, sumRows } from './ops/reduce.ts';
export { residualAdd, residualAddInPlace, scaleInPlace } from './ops/residual.ts';
export { rmsnormBackward, rmsnormForward, rmsnormScratchSize } from './ops/rmsnorm.ts';
export { ropeBackward, ropeForward, ropeInvFreq } from './ops/rope.ts';
export type { RopeOptions } from './ops/rope.ts';
export { sample } from './ops/sample.ts';
export type { SampleOptions } from './ops/sample.ts';
export { softmaxBackward, softmaxForward } from './ops/softmax.ts';
export { swigluBackward, swigluForward } from './ops/swiglu.ts';
export { valueLoss, VALUE_STATS } from './ops/value_loss.ts';

// The engine (src/model): GPU base weights, LoRA adapters, training, generation.
export { BaseModel } from './model/base_model.ts';
export type { BaseModelOptions } from './model/base_model.ts';
export { LoraAdapter } from './model/lora.ts';
export type { LoraAdapterOptions } from './model/lora.ts';
export { Trainer } from './model/trainer.ts';
export type { ForwardBackwardResult, LogprobsResult, StepStats, Trainable, TrainerOptions, TrainerState } from './model/trainer.ts';
export type { OptimizerState, OptimStepOptions } from './model/optimizer.ts';
export { generate } from './model/generate.ts';
export type { GenerateOptions, GenerateResult } from './model/generate.ts';
export { engineSampleFn, tokenizerVocabMask } from './model/sample_fn.ts';
export type { VocabMask } from './ops/vocab_mask.ts';
export type { EngineSampleFnOptions } from './model/sample_fn.ts';

// Tinker-style clients.
export { LocalService } from './runtime/local_service.ts';
export type { LocalServiceOptions } from './runtime/local_service.ts';
export { fullTrainingOptions, loraTrainingOptions } from './runtime/clients.ts';
export type {
  CreateModelOptions,
  FullTrainingOptions,
  HostParams,
  LoraTrainingOptions,
  OptimStepResult,
  SamplingClient,
  ServiceClient,
  TrainingClient,
  TrainingClientOptions,
} from './runtime/clients.ts';
export { makeSampleCall } from './runtime/sample_call.ts';
export type {
  EngineSample,
  EngineSampleResult,
  ModelInput,
  SampleCall,
  SampledSequence,
  SampleResponse,
  SamplerSettings,
  SamplingParams,
  StopReason,
} from './runtime/sample_call.ts';

// Matmul and LoRA linear kernels.
export { HARDWARE_MATMUL_CONFIG, matmul, matmulConfigFor, matrixBlock, planMatmul, recordMatmul } from './ops/matmul.ts';
export type { LowRankTerm, MatmulConfig, MatmulOperand, MatmulOptions, MatrixBlock } from './ops/matmul.ts';
export { LORA_MAX_RANK, loraLinearBackward, loraLinearForward } from './ops/lora_linear.ts';
export type { LoraLinearBackwardOptions, LoraLinearOptions } from './ops/lora_linear.ts';

// The GPU worker behind the scheduler, and the training job built on the clients.
export { LostWithDeviceError, WorkerService } from './runtime/worker_service.ts';
export type {
  SamplerScheduleOptions,
  WorkerSamplingClient,
  WorkerServiceEvent,
  WorkerServiceOptions,
  WorkerTrainingClient,
  WorkerTrainingClientOptions,
} from './runtime/worker_service.ts';
export { ALGOS, runTraining, summaryOf } from './runtime/rl_job.ts';
export type { Algo, JobOptions, JobResult, JobSummary, StepMetrics } from './runtime/rl_job.ts';
export { ENV_NAMES, jobEnv } from './runtime/evaluate.ts';
export type { EnvName, JobEnv, JobEnvLimits } from './runtime/evaluate.ts';
// One call from an environment to a trained adapter, with `npm run train`'s defaults.
export { jobOptions, train, TRAIN_DEFAULTS } from './runtime/train.ts';
export { checkJobOptions, JOB_LIMITS } from './runtime/job_config.ts';
export type { DroppedByReason } from './runtime/env_failures.ts';
export type { TrainSettings } from './runtime/train.ts';

// Checkpoints, recovery, published adapters, non-finite steps and the metrics stream of jobs.
export { JobCheckpointer } from './runtime/job_checkpoint.ts';
export type { JobCheckpoint, JobCheckpointing, JobProgress, StoredJobState } from './runtime/job_checkpoint.ts';
export { isGpuLoss, LocalServiceSource, runTrainingRecovering, workerServiceSource } from './runtime/recovery.ts';
export type { RecoveringOptions, RecoveryEvent, ServiceSource } from './runtime/recovery.ts';
export { DeviceLostError, NonFiniteStepsError } from './runtime/errors.ts';
export { AdapterRegistry } from './runtime/adapter_registry.ts';
export type { AdapterRegistryOptions, PublishedAdapter, RegistryModel, RegistryStats } from './runtime/adapter_registry.ts';
export type { JobStatus } from './runtime/worker_service.ts';
export { jsonLine, kvMetricsSink, MetricsStream, readKvMetrics, spread, stepLossStats } from './runtime/metrics.ts';
export type { MetricsSink, StepLossStats } from './runtime/metrics.ts';
