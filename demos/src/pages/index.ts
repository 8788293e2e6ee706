// The landing page: header and WebGPU line only.
import { pageShell } from '../lib/page.ts';

await pageShell('home');
