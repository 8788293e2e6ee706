/**
 * The agent & environment layer's public names (contracts, agent, protocols, demonstrations,
 * built-in environments). src/mod.ts re-exports the curated subset.
 */
export type {
  ChatMessage,
  Counterfactual,
  Demonstration,
  DroppedEpisode,
  DropReason,
  EndReason,
  EnvSpec,
  Environment,
  JsonValue,
  KeptEndReason,
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
} from './types.ts';
export { END_REASONS } from './types.ts';
export { ArithmeticError, EnvironmentError, InvalidInputError, SampleContractError } from './errors.ts';
export type { ArithmeticErrorKind } from './errors.ts';
export { ACTION_STOP_STRINGS, extractAnswer, formatAnswer, formatToolCall, parseAction } from './actions.ts';
export type { ParsedAction } from './actions.ts';
export { chatFormat, describeTools, fencedToolOutput, plainFormat } from './format.ts';
export type { ChatFormatOptions, ChatRenderOptions, ChatTemplateFn, FormatContext, PlainFormatOptions, PromptFormat } from './format.ts';
export { hfChatFormat } from './chat_template.ts';
export type { ChatTemplateTokenizer, HfChatFormatOptions } from './chat_template.ts';
export { hermesToolSyntax, llamaToolSyntax, nativeToolSyntax, tagToolSyntax, toolArgs, toolParameters, toolSchemas } from './tool_calls.ts';
export type { ToolCallSyntax } from './tool_calls.ts';
export { Agent, generationEosIds, requestSeed } from './agent.ts';
export type { AgentOptions } from './agent.ts';
export { groupEpisodes } from './batch.ts';
export type { EpisodeSpec } from './batch.ts';
export { rolloutEpisodes, rolloutGroups, rolloutMultiTurn, rolloutSingleTurn } from './rollout.ts';
export type { GroupRolloutOptions, Protocol, RolloutOptions } from './rollout.ts';
export { rolloutTurnBased } from './multiagent.ts';
export type { GameResult, ScriptedPolicy, Seat, TurnBasedBatch, TurnBasedOptions } from './multiagent.ts';
export { replayDemonstrations, replayTurnBasedDemonstrations, scriptedSampleFn } from './demos.ts';
export type { ReplayAgentOptions, ReplayResult } from './demos.ts';
export { evaluateArithmetic, formatNumber, MAX_DEPTH, MAX_EXPRESSION_LENGTH } from './envs/arith.ts';
export { answerMatches, calculatorDemonstrations, calculatorEnv, calculatorTask, calculatorTool } from './envs/calculator.ts';
export type { CalculatorOptions, CalculatorTask } from './envs/calculator.ts';
export { promptEnv } from './envs/prompt.ts';
export type { PromptEnvOptions, PromptReward } from './envs/prompt.ts';
export { guessNumberDemonstrations, guessNumberEnv, guessReward, parseGuess, secretNumber } from './envs/guess_number.ts';
export type { GuessNumberOptions } from './envs/guess_number.ts';
export {
  formatNimMove,
  isLegalNimMove,
  nimDemonstrations,
  nimEnv,
  nimOptimalMove,
  nimOptimalPolicy,
  nimPiles,
  nimRandomPolicy,
  parseNimMove,
  parseNimPiles,
  randomNimMove,
} from './envs/nim.ts';
export type { NimMove, NimOptions } from './envs/nim.ts';
export {
  parsePick,
  parseSignal,
  signalCodeListener,
  signalCodeSpeaker,
  signalDemonstrations,
  signalEnv,
  signalGame,
  signalRandomListener,
  signalRandomSpeaker,
  signalSuccess,
  signalListenerAction,
  signalSpeakerAction,
} from './envs/signal.ts';
export type { SignalMessage, SignalOptions, SignalPick, SignalPrompt } from './envs/signal.ts';
export {
  bargainAnswer,
  bargainBestBuyer,
  bargainBestPrice,
  bargainBestSeller,
  bargainDemonstrations,
  bargainEnv,
  bargainGame,
  bargainPayoffs,
  bargainRandomBuyer,
  bargainRandomSeller,
  bargainReferences,
  bargainSuccess,
  bargainTruthfulBuyer,
  parseAccept,
  parsePrice,
} from './envs/bargain.ts';
export type { BargainAnswers, BargainOptions } from './envs/bargain.ts';
export type { Tokenizer } from '../model/tokenizer/tokenizer.ts';
export { TokenizerError } from '../model/tokenizer/tokenizer.ts';
export { BYTE_BOS_ID, BYTE_EOS_ID, BYTE_PAD_ID, BYTE_VOCAB_SIZE, ByteTokenizer } from '../model/tokenizer/byte.ts';
