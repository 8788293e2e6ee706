/**
 * CPU reference of kernels/embedding.wgsl. The backward sums each row's tokens in increasing
 * token order in f32 (Math.fround per add), the order the GPU uses, so the two agree bitwise.
 */

/** out[n] = table[ids[n]] (+ wpe[pos[n]]); ids/positions outside their table contribute 0. */
export function embeddingForwardRef(
  out: Float32Array, ids: Int32Array, table: Float32Array, rows: number, c: number,
  wpe?: Float32Array, pos?: Int32Array, posRows = 0,
): void {
  for (let n = 0; n < ids.length; n++) {
    for (let j = 0; j < c; j++) {
      let v = ids[n] >= 0 && ids[n] < rows ? table[ids[n] * c + j] : 0;
      if (wpe && pos && pos[n] >= 0 && pos[n] < posRows) v = Math.fround(v + wpe[pos[n] * c + j]);
      out[n * c + j] = v;
    }
  }
}

/** dtable[r] = (or += when `accumulate`, for rows with tokens) Σ_{n: ids[n] = r} dout[n], increasing n. */
export function embeddingBackwardRef(
  dtable: Float32Array, dout: Float32Array, ids: Int32Array, rows: number, c: number, accumulate = false,
): void {
  const sum = new Float32Array(rows * c);
  const touched = new Uint8Array(rows);
  for (let n = 0; n < ids.length; n++) {
    const r = ids[n];
    if (r < 0 || r >= rows) continue;
    touched[r] = 1;
    for (let j = 0; j < c; j++) sum[r * c + j] = Math.fround(sum[r * c + j] + dout[n * c + j]);
  }
  for (let r = 0; r < rows; r++) {
    for (let j = 0; j < c; j++) {
      const i = r * c + j;
      if (!accumulate) dtable[i] = sum[i];
      else if (touched[r]) dtable[i] = Math.fround(dtable[i] + sum[i]);
    }
  }
}
