/**
 * Typed errors shared by every layer.
 *
 * Each error names what was wrong — the kernel, the tensor, the shape, the field, the file — so a
 * caller can fix the input without reading our source. `code` is stable and machine-readable;
 * `message` is for people.
 */

export class WebtinkerError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** WebGPU is missing, or no adapter / device could be had. `hint` says what to install. */
export class WebGpuUnavailableError extends WebtinkerError {
  readonly hint: string;
  constructor(message: string, hint: string, options?: { cause?: unknown }) {
    super('webgpu-unavailable', `${message} — ${hint}`, options);
    this.hint = hint;
  }
}

/** A WGSL source failed to compile or its pipeline failed to build. */
export class KernelCompileError extends WebtinkerError {
  readonly kernel: string;
  readonly messages: readonly string[];
  constructor(kernel: string, messages: readonly string[], options?: { cause?: unknown }) {
    super('kernel-compile', `kernel "${kernel}" failed to compile:\n  ${messages.join('\n  ')}`, options);
    this.kernel = kernel;
    this.messages = messages;
  }
}

/** The GPU reported a validation or out-of-memory error for work we submitted. */
export class GpuValidationError extends WebtinkerError {
  readonly kernels: readonly string[];
  constructor(kind: 'validation' | 'out-of-memory' | 'internal', kernels: readonly string[], message: string) {
    super(`gpu-${kind}`, `GPU ${kind} error in submission [${kernels.join(', ')}]: ${message}`);
    this.kernels = kernels;
  }
}

/** A kernel or function was handed tensors whose shapes or dtypes do not fit together. */
export class ShapeError extends WebtinkerError {
  readonly op: string;
  constructor(op: string, message: string) {
    super('shape', `${op}: ${message}`);
    this.op = op;
  }
}

/** A request exceeds what the device allows (binding size, workgroups, memory). */
export class LimitError extends WebtinkerError {
  readonly op: string;
  constructor(op: string, message: string) {
    super('limit', `${op}: ${message}`);
    this.op = op;
  }
}

/** A use of an object after it was released or destroyed. */
export class ReleasedError extends WebtinkerError {
  constructor(what: string) {
    super('released', `${what} was already released`);
  }
}

/** A configuration value (a CLI flag, a config field) is missing or invalid. */
export class ConfigError extends WebtinkerError {
  readonly field: string;
  constructor(field: string, message: string) {
    super('config', `${field}: ${message}`);
    this.field = field;
  }
}

/**
 * A model produced non-finite values (NaN or ±Inf) where finite ones are needed — its logits at
 * sampling — so its weights hold non-finite values or overflow. Names the model and where (the
 * call, the decode step, the job's step when a runner adds it).
 */
export class NonFiniteError extends WebtinkerError {
  readonly model: string;
  readonly where: string;
  constructor(model: string, where: string, message: string, options?: { cause?: unknown }) {
    super('non-finite', `${model}: ${where}: ${message}`, options);
    this.model = model;
    this.where = where;
  }
}

/**
 * A dispatch does not match its kernel's WGSL: a uniform field or binding name the kernel does
 * not declare, a missing uniform field, or a binding the entry point uses that was not given
 * (src/gpu/kernel_layout.ts). Names the kernel and the field or binding.
 */
export class KernelBindingError extends WebtinkerError {
  readonly kernel: string;
  readonly field: string;
  constructor(kernel: string, field: string, message: string) {
    super('kernel-binding', `kernel "${kernel}": ${field}: ${message}`);
    this.kernel = kernel;
    this.field = field;
  }
}
