/**
 * curve.svg without a browser: the run-curves specification (src/plot/run_curves.ts) drawn on
 * linkedom's DOM.
 */
import { parseHTML } from 'linkedom';
import { type RunCurves, runCurvesSvgWith } from '../plot/run_curves.ts';

export type { RunCurves } from '../plot/run_curves.ts';

/** The run's curves as one standalone SVG document. */
export function runCurvesSvg(c: RunCurves): string {
  return runCurvesSvgWith(parseHTML('<!doctype html><html><body></body></html>').document as unknown as Document, c);
}
