/**
 * A fake GPUDevice for Node unit tests of host-side logic (pool accounting, limit checks).
 * It records buffer creation and destruction; it runs no shader.
 */
export interface FakeBuffer {
  size: number;
  usage: number;
  label: string;
  destroyed: boolean;
  destroy(): void;
}

export function fakeDevice(limits: Partial<Record<string, number>> = {}): GPUDevice & { created: FakeBuffer[] } {
  const created: FakeBuffer[] = [];
  const device = {
    created,
    limits: { maxBufferSize: 1 << 30, maxStorageBufferBindingSize: 1 << 27, maxComputeWorkgroupsPerDimension: 65535, ...limits },
    createBuffer(desc: { size: number; usage: number; label?: string }): FakeBuffer {
      const b: FakeBuffer = {
        size: desc.size,
        usage: desc.usage,
        label: desc.label ?? '',
        destroyed: false,
        destroy() {
          this.destroyed = true;
        },
      };
      created.push(b);
      return b;
    },
  };
  return device as unknown as GPUDevice & { created: FakeBuffer[] };
}
