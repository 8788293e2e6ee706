/**
 * Typed errors of the model layer: configs, weight files, adapters.
 *
 * Each names what to fix: the config field (in our names or Hugging Face's), the tensor and the
 * file. Messages are for people, `code` and the fields are for programs.
 */
import { ConfigError, WebtinkerError } from '../errors.ts';

/**
 * A model or LoRA configuration value is missing, has the wrong type, or describes something we
 * do not support. `field` is our field name (`nKvHead`, `lora.rank`) or, for a Hugging Face
 * config.json, its key (`num_key_value_heads`). Extends the shared ConfigError, so generic
 * handlers of bad configuration catch it too.
 */
export class ModelConfigError extends ConfigError {
  constructor(field: string, message: string) {
    super(field, message);
  }
}

/** What was wrong with a safetensors file. */
export type SafetensorsErrorKind =
  | 'truncated' // shorter than its own header says, or than 8 bytes
  | 'header' // header length, UTF-8, JSON, or structure
  | 'forbidden-key' // __proto__ / constructor / prototype anywhere in the header
  | 'dtype' // unknown dtype, or a dtype we cannot convert
  | 'shape' // shape invalid or its byte size does not match data_offsets
  | 'offsets' // out of range, overlapping, or not covering the data exactly
  | 'missing' // a tensor name the file does not hold
  | 'io'; // reading the bytes failed (fetch, file system, Blob)

/**
 * A safetensors file is malformed, or a read from it failed. `file` is the file's name (or URL, or
 * '<memory>'); `tensor` is the tensor's name where one is at fault.
 */
export class SafetensorsError extends WebtinkerError {
  readonly kind: SafetensorsErrorKind;
  readonly file: string;
  readonly tensor: string | undefined;
  constructor(kind: SafetensorsErrorKind, file: string, tensor: string | undefined, message: string, options?: { cause?: unknown }) {
    super(`safetensors-${kind}`, `${file}${tensor === undefined ? '' : `: tensor "${tensor}"`}: ${message}`, options);
    this.kind = kind;
    this.file = file;
    this.tensor = tensor;
  }
}

/** What was wrong with a set of weights relative to the model config. */
export type WeightsErrorKind = 'missing' | 'unexpected' | 'shape' | 'dtype' | 'adapter';

/**
 * Weights do not fit the config: a tensor is missing, unexpected, or has the wrong shape; or a PEFT
 * adapter cannot be represented. Names the tensor (in the file's naming) and the file.
 */
export class WeightsError extends WebtinkerError {
  readonly kind: WeightsErrorKind;
  readonly file: string;
  readonly tensor: string | undefined;
  constructor(kind: WeightsErrorKind, file: string, tensor: string | undefined, message: string) {
    super(`weights-${kind}`, `${file}${tensor === undefined ? '' : `: tensor "${tensor}"`}: ${message}`);
    this.kind = kind;
    this.file = file;
    this.tensor = tensor;
  }
}
