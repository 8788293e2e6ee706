/**
 * The device's f32 peak, measured: the kernel table's GFLOP/s mean little without it (issue 8
 * asks for absolute TFLOP/s and the fraction of the device's peak). WebGPU exposes no clock rates
 * or core counts, so the peak is what a kernel of nothing but independent fused multiply-adds
 * reaches on this adapter: each invocation runs 8 independent vec4 fma chains (64 flops an
 * iteration, enough independent work to hide the FMA latency of a GPU's cores and to fill the
 * SIMD lanes of a CPU rasterizer), over a grid grown until one dispatch lasts `targetMs`. Timed
 * with timestamp queries where the adapter offers them, else by the wall clock of a few
 * dispatches per completion wait. The figure is the best of `runs` dispatches at the final size.
 */

const WGSL = /* wgsl */ `
struct Params { m: f32, c: f32, iters: u32, row: u32 }
@group(0) @binding(0) var<storage, read_write> sink: array<vec4f>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let i = gid.x + gid.y * p.row;
  let s = f32(i & 1023u) * 1e-3;
  var a0 = vec4f(s, s + 0.1, s + 0.2, s + 0.3);
  var a1 = a0 + 1.0;
  var a2 = a0 + 2.0;
  var a3 = a0 + 3.0;
  var a4 = a0 + 4.0;
  var a5 = a0 + 5.0;
  var a6 = a0 + 6.0;
  var a7 = a0 + 7.0;
  let m = vec4f(p.m);
  let c = vec4f(p.c);
  for (var k = 0u; k < p.iters; k++) {
    a0 = fma(a0, m, c);
    a1 = fma(a1, m, c);
    a2 = fma(a2, m, c);
    a3 = fma(a3, m, c);
    a4 = fma(a4, m, c);
    a5 = fma(a5, m, c);
    a6 = fma(a6, m, c);
    a7 = fma(a7, m, c);
  }
  // One store per workgroup's first lane keeps every chain live without a memory-bound sink.
  let v = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  if ((i & 63u) == 0u || v.x == 12345.678) { sink[i >> 6u] = v; }
}
`;

/** FLOPs of one iteration of one invocation: 8 chains × 4 lanes × (multiply + add). */
export const FLOPS_PER_ITER = 64;
/** Loop iterations per invocation (llvmpipe stops loops past 65535 iterations). */
export const PEAK_ITERS = 4096;
const WG = 64;
const MAX_X = 65535;

export interface DevicePeak {
  /** Best measured f32 FMA throughput, GFLOP/s. */
  readonly gflops: number;
  /** How the dispatches were timed. */
  readonly timing: 'timestamp-query' | 'wall clock';
  /** Workgroups of 64 invocations in the final grid, and the seconds of its best dispatch. */
  readonly workgroups: number;
  readonly seconds: number;
}

/** Workgroup grid [x, y] for `n` workgroups: x ≤ 65535, n rounded up to whole rows. */
export function peakGrid(n: number): [number, number] {
  if (n <= MAX_X) return [n, 1];
  const y = Math.ceil(n / MAX_X);
  return [Math.ceil(n / y), y];
}

export async function measureDevicePeak(device: GPUDevice, opts: { targetMs?: number; runs?: number; maxWorkgroups?: number } = {}): Promise<DevicePeak> {
  const targetMs = opts.targetMs ?? 100;
  const runs = opts.runs ?? 3;
  const maxWorkgroups = opts.maxWorkgroups ?? MAX_X * 64;
  const timestamps = device.features.has('timestamp-query');
  const module = device.createShaderModule({ label: 'bench peak fma', code: WGSL });
  const pipeline = await device.createComputePipelineAsync({ label: 'bench peak fma', layout: 'auto', compute: { module, entryPoint: 'main' } });
  const sink = device.createBuffer({ size: (maxWorkgroups + 64) * 16, usage: GPUBufferUsage.STORAGE });
  const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const query = timestamps ? device.createQuerySet({ type: 'timestamp', count: 2 }) : null;
  const resolve = timestamps ? device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC }) : null;
  const read = timestamps ? device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }) : null;
  const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: sink } }, { binding: 1, resource: { buffer: params } }] });

  let wall = !timestamps;
  /** Seconds of one dispatch of `n` workgroups. */
  const time = async (n: number): Promise<number> => {
    const [x, y] = peakGrid(n);
    const data = new ArrayBuffer(16);
    new Float32Array(data, 0, 2).set([0.9999, 1e-4]);
    new Uint32Array(data, 8, 2).set([PEAK_ITERS, x * WG]);
    device.queue.writeBuffer(params, 0, data);
    if (timestamps) {
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass({ timestampWrites: { querySet: query!, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } });
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bind);
      pass.dispatchWorkgroups(x, y);
      pass.end();
      enc.resolveQuerySet(query!, 0, 2, resolve!, 0);
      enc.copyBufferToBuffer(resolve!, 0, read!, 0, 16);
      device.queue.submit([enc.finish()]);
      await read!.mapAsync(GPUMapMode.READ);
      const [t0, t1] = new BigUint64Array(read!.getMappedRange().slice(0));
      read!.unmap();
      if (t1 > t0) return Number(t1 - t0) / 1e9;
    }
    // Wall clock: four dispatches per completion wait (a wait costs ~11 ms under Deno).
    wall = true;
    const per = 4;
    const t0 = performance.now();
    const enc = device.createCommandEncoder();
    for (let i = 0; i < per; i++) {
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bind);
      pass.dispatchWorkgroups(x, y);
      pass.end();
    }
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    return (performance.now() - t0) / 1000 / per;
  };

  try {
    let n = 16;
    await time(n); // compile and warm
    let s = await time(n);
    while (s * 1000 < targetMs && n < maxWorkgroups) {
      n = Math.min(maxWorkgroups, n * Math.max(2, Math.min(16, Math.ceil((targetMs / 1000 / Math.max(s, 1e-6)) * 0.9))));
      s = await time(n);
    }
    let best = s;
    for (let r = 1; r < runs; r++) best = Math.min(best, await time(n));
    const [x, y] = peakGrid(n);
    const flops = x * y * WG * PEAK_ITERS * FLOPS_PER_ITER;
    return { gflops: flops / best / 1e9, timing: wall ? 'wall clock' : 'timestamp-query', workgroups: x * y, seconds: best };
  } finally {
    sink.destroy();
    params.destroy();
    query?.destroy();
    resolve?.destroy();
    read?.destroy();
  }
}
