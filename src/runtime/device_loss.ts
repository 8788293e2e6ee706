/**
 * Telling a failure caused by a lost device from any other. A call in flight when the device goes
 * fails with whatever the driver reports first (a validation error of its submission, a rejected
 * buffer map), and the device's `lost` promise settles a little later, so a failure that could be
 * the GPU's waits up to LOSS_GRACE_MS for the loss to show.
 * Errors that cannot come from the GPU (bad input, a missing object) are passed on at once.
 */
import { ConfigError, GpuValidationError, ReleasedError, WebtinkerError } from '../errors.ts';
import type { GpuContext } from '../gpu/device.ts';
import { DeviceLostError } from './errors.ts';

/** How long a failure that may be the GPU's waits for the device loss to be reported. */
export const LOSS_GRACE_MS = 1000;

function mayBeTheGpu(e: unknown): boolean {
  if (e instanceof DeviceLostError) return true;
  if (e instanceof ConfigError) return false;
  return !(e instanceof WebtinkerError) || e instanceof GpuValidationError || e instanceof ReleasedError;
}

/** Whether `ctx` is lost, or becomes lost within `graceMs`, after `e` failed a call on it. */
export async function lostUnder(ctx: GpuContext, e: unknown, graceMs = LOSS_GRACE_MS): Promise<boolean> {
  if (ctx.isLost) return true;
  if (!mayBeTheGpu(e)) return false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((res) => (timer = setTimeout(() => res(false), graceMs)));
  try {
    return await Promise.race([ctx.lost.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** `e` as a DeviceLostError when the device was lost under it, else `e` itself. */
export async function asDeviceLoss(ctx: GpuContext, e: unknown, graceMs = LOSS_GRACE_MS): Promise<unknown> {
  if (e instanceof DeviceLostError || !(await lostUnder(ctx, e, graceMs))) return e;
  return new DeviceLostError(e instanceof Error ? e.message : String(e), { cause: e });
}
