// The embed page: the site header, then the widgets of the page body (each a <webtinker-demo>).
import '../widget.ts';
import { pageShell } from '../lib/page.ts';

await pageShell('embed');
