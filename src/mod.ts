/**
 * webtinker — the public API. Named exports only; everything else is internal.
 *
 * The top level is what training an agent takes, layer by layer (see DESIGN.md): jobs (`train`),
 * environments and agents (src/env), algorithms (src/algorithms), the Tinker-style services and
 * clients, stores, loading and saving models, and the typed errors. The engine under them is in
 * namespaces, as jax-js keeps `numpy`, `nn` and `lax`:
 *
 *   engine   the transformer on the GPU and the model layer under it (src/model/mod.ts)
 *   ops      the host wrapper of every WGSL kernel (src/ops/mod.ts)
 *   gpu      device, buffer pool, tensors, pipelines, recorder, profiler (src/gpu/mod.ts)
 *   runtime  scheduler, GPU worker protocol, adapter registry, job checks (src/runtime/mod.ts)
 *
 * Each name is in one place: test/unit/public_api.test.ts pins the top-level list, checks that no
 * namespace repeats a top-level name, and that the README's examples import what exists.
 */

// ─── Errors: typed, naming the field, tensor or file that was wrong ───────────────────────────
export {
  ConfigError,
  GpuValidationError,
  KernelBindingError,
  KernelCompileError,
  LimitError,
  NonFiniteError,
  ReleasedError,
  ShapeError,
  WebGpuUnavailableError,
  WebtinkerError,
} from './errors.ts';
export { AdmissionError, DeviceLostError, JobCancelledError, JobStateError, NonFiniteStepsError } from './runtime/errors.ts';
export type { AdmissionNumbers } from './runtime/errors.ts';
export { WorkerCrashedError } from './runtime/gpu_client.ts';
export { LostWithDeviceError } from './runtime/worker_service.ts';
export { StoreCorruptError, StoreError, StoreNotFoundError, StoreQuotaError } from './runtime/store/mod.ts';
export { ArithmeticError, EnvironmentError, InvalidInputError, SampleContractError, TokenizerError } from './env/mod.ts';
export { HubError } from './hub/mod.ts';
export type { HubErrorKind } from './hub/mod.ts';
export { ModelConfigError, SafetensorsError, WeightsError } from './model/errors.ts';
export type { SafetensorsErrorKind, WeightsErrorKind } from './model/errors.ts';

// ─── Jobs: one call from an environment to a trained adapter, and the runner under it ──────────
export { jobOptions, train, TRAIN_DEFAULTS } from './runtime/train.ts';
export type { LoadedModel, TrainResult, TrainSettings } from './runtime/train.ts';
export { agentsModelConfig, trainAgents } from './runtime/agents_job.ts';
export type { AgentsEvaluation, AgentsResult, AgentsSettings, AgentsStepMetrics, SeatSettings } from './runtime/agents_settings.ts';
export type { InformationBonus } from './algorithms/information_bonus.ts';
export type { SampleTextOptions } from './runtime/policy.ts';
export { ALGOS, runTraining } from './runtime/rl_job.ts';
export type { Algo, JobOptions, JobResult, JobSummary, StepMetrics } from './runtime/rl_job.ts';
export { ENV_NAMES, jobEnv } from './runtime/job_envs.ts';
export type { EnvName, JobEnv, JobEnvLimits } from './runtime/job_envs.ts';
export type { DroppedByReason } from './runtime/env_failures.ts';
export { JobCheckpointer } from './runtime/job_checkpoint.ts';
export type { JobCheckpoint, JobCheckpointing, JobProgress, StoredJobState } from './runtime/job_checkpoint.ts';
export { LocalServiceSource, runTrainingRecovering, workerServiceSource } from './runtime/recovery.ts';
export type { RecoveringOptions, RecoveryEvent, ServiceSource } from './runtime/recovery.ts';
export { kvMetricsSink, MetricsStream, readKvMetrics } from './runtime/metrics.ts';
export type { MetricsSink } from './runtime/metrics.ts';

// ─── Environments and agents (src/env): the Gym-like contract, the agent, rollouts, built-ins ──
export type {
  Counterfactual,
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
  Turn,
  TurnBasedEnvironment,
  TurnBasedEnvSpec,
  TurnObservation,
  TurnStepResult,
} from './env/mod.ts';
export {
  ACTION_STOP_STRINGS,
  Agent,
  ByteTokenizer,
  calculatorEnv,
  promptEnv,
  chatFormat,
  extractAnswer,
  formatAnswer,
  formatToolCall,
  generationEosIds,
  groupEpisodes,
  guessNumberEnv,
  hermesToolSyntax,
  hfChatFormat,
  llamaToolSyntax,
  nimEnv,
  nimOptimalPolicy,
  nimRandomPolicy,
  bargainBestPrice,
  bargainEnv,
  bargainRandomSeller,
  bargainReferences,
  bargainTruthfulBuyer,
  signalCodeListener,
  signalCodeSpeaker,
  signalEnv,
  signalRandomListener,
  signalRandomSpeaker,
  parseAction,
  plainFormat,
  replayDemonstrations,
  replayTurnBasedDemonstrations,
  rolloutGroups,
  rolloutMultiTurn,
  rolloutSingleTurn,
  rolloutTurnBased,
  tagToolSyntax,
} from './env/mod.ts';
export type {
  AgentOptions,
  CalculatorOptions,
  ChatFormatOptions,
  EpisodeSpec,
  GameResult,
  GroupRolloutOptions,
  GuessNumberOptions,
  HfChatFormatOptions,
  NimOptions,
  SignalOptions,
  ParsedAction,
  PlainFormatOptions,
  PromptEnvOptions,
  PromptFormat,
  PromptReward,
  ReplayAgentOptions,
  ReplayResult,
  RolloutOptions,
  Tokenizer,
  ToolCallSyntax,
  TurnBasedOptions,
} from './env/mod.ts';
export { Rng } from './util/rng.ts';
export type { RngState } from './util/rng.ts';

// ─── Algorithms (src/algorithms): pure functions from trajectories to datums and loss specs ────
export {
  clippedValueLoss,
  crossEntropyLoss,
  datumFromSequence,
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
  sftDatumsFromPairs,
  trajectoryToDatum,
  valueLossSpec,
} from './algorithms/mod.ts';
export type { Aggregation, Datum, GaeOptions, GroupRelativeOptions, LossSpec, PackedBatch, PackedStep, PackOptions, PpoDatumOptions } from './algorithms/mod.ts';

// ─── Tinker-style services and clients: in-process, or behind the GPU worker and its scheduler ─
export type {
  CreateModelOptions,
  ForwardBackwardResult,
  FullTrainingOptions,
  HostParams,
  LogprobsResult,
  LoraTrainingOptions,
  ModelInput,
  OptimStepOptions,
  OptimStepResult,
  PublishedAdapter,
  SampledSequence,
  SampleResponse,
  SamplingClient,
  SamplingParams,
  ServiceClient,
  StopReason,
  Trainable,
  TrainerState,
  TrainingClient,
  TrainingClientOptions,
} from './runtime/clients.ts';
export { fullTrainingOptions, loraTrainingOptions, saveWeightsAndGetSamplingClient } from './runtime/clients.ts';
export { forwardBackwardCustom } from './runtime/custom_loss.ts';
export type { CustomLossFn, SequenceLogprobs } from './runtime/custom_loss.ts';
export { LocalService } from './runtime/local_service.ts';
export type { LocalServiceOptions } from './runtime/local_service.ts';
export { WorkerSamplingClient, WorkerService, WorkerTrainingClient } from './runtime/worker_service.ts';
export type { SamplerScheduleOptions, WorkerServiceEvent, WorkerServiceOptions, WorkerTrainingClientOptions } from './runtime/worker_service.ts';

// ─── Stores: versioned adapters and checkpoints over IndexedDB, files or memory ───────────────
export { AdapterStore, CheckpointStore, defaultKv, IdbKv, MemoryKv } from './runtime/store/mod.ts';
export type { AdapterInfo, AdapterMeta, AdapterTensor, CheckpointInfo, CheckpointMeta, KvStore } from './runtime/store/mod.ts';

// ─── Models: presets, pretrained checkpoints from the Hub, Hugging Face / PEFT / safetensors I/O ─
export { preset, PRESETS } from './model/presets.ts';
export type { PresetName } from './model/presets.ts';
export type { LoraConfig, LoraTarget, ModelConfig } from './model/config.ts';
export { BrowserHubCache, deleteCachedModel, listCachedModels, loadPretrained } from './hub/mod.ts';
export type { CachedModel, CacheOptions, GenerationConfig, HubCache, HubProgress, LoadPretrainedOptions, Pretrained } from './hub/mod.ts';
export { configFromHf, configToHf } from './model/hf_config.ts';
export { exportHfWeights, importHfWeights } from './model/weight_names.ts';
export { exportPeftAdapter, importPeftAdapter } from './model/peft.ts';
export type { PeftAdapter } from './model/peft.ts';
export { openSafetensors } from './model/safetensors.ts';
export { writeSafetensors } from './model/safetensors_write.ts';
export { HfTokenizer, loadHfTokenizer } from './model/tokenizer/hf.ts';

// ─── The engine, in namespaces ───────────────────────────────────────────────────────────────
/** The transformer on the GPU (BaseModel, LoraAdapter, Trainer, generate, engineSampleFn) and the model layer under it. */
export * as engine from './model/mod.ts';
/** The host wrapper of every WGSL kernel, for custom models and benchmarks. */
export * as ops from './ops/mod.ts';
/** Device acquisition (acquireGpu), buffer pool, tensors, pipelines, dispatch recorder, profiler. */
export * as gpu from './gpu/mod.ts';
/** Scheduler, GPU worker client and protocol, adapter registry, engine sample call, job checks. */
export * as runtime from './runtime/mod.ts';
