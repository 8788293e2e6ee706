/**
 * The algorithms layer's public names: advantage estimators, datum conversion, loss specs and
 * their CPU references, per-algorithm datum builders, batch packing. All pure, no GPU types.
 */
export { EMPTY_BASELINE, gae, groupRelativeAdvantages, maskedGae, reinforceAdvantages, rlooAdvantages } from './advantages.ts';
export type { GaeOptions, GroupRelativeOptions, MovingBaseline } from './advantages.ts';
export { broadcastAdvantage, datumFromSequence, datumsWith, targetMaskT, tokenRewardsT, trajectoryToDatum } from './datum.ts';
export type { Datum, DatumExtras } from './datum.ts';
export { crossEntropyLoss, dpoLoss, grpoLoss, importanceSamplingLoss, ppoLoss, valueLossSpec } from './loss_spec.ts';
export type { Aggregation, CrossEntropyLoss, DpoLoss, GrpoLoss, ImportanceSamplingLoss, LossSpec, PolicyLossSpec, PpoLoss, Reduction, ValueLossSpec } from './loss_spec.ts';
export { clippedSurrogate, clippedValueLoss, grpoTerm, POLICY_TERMS, policyTerm } from './loss_terms.ts';
export type { Term, TermFn } from './loss_terms.ts';
export { aggregationScales, policyLossReference } from './losses.ts';
export type { PolicyLossInput, PolicyLossResult } from './losses.ts';
export { outcomeDatums } from './outcome.ts';
export type { OutcomeDatumOptions } from './outcome.ts';
export { grpoDatums } from './grpo.ts';
export { rlooDatums } from './rloo.ts';
export { reinforceDatums } from './reinforce.ts';
export { ppoDatums, valueLossReference } from './ppo.ts';
export type { PpoDatumOptions } from './ppo.ts';
export { encodePair, sftDatums, sftDatumsFromPairs } from './sft.ts';
export type { TextEncodeOptions, TextPair } from './sft.ts';
export { dpoDatums, dpoPairLoss, dpoPairsFromGroups, dpoPairsFromPreferences, dpoReference, sequenceLogprob } from './dpo.ts';
export type { DpoPair, OnlinePairOptions, PreferencePair } from './dpo.ts';
export { packDatums } from './pack.ts';
export type { PackedBatch, PackedStep, PackOptions } from './pack.ts';
