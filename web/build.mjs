// Builds the web table into dist/: the page, its stylesheet and one bundled script.
// Run by `npm run build` (the Makefile's web target) after the stubs are generated into gen/.
import { build } from "esbuild";
import { copyFile, mkdir } from "node:fs/promises";

const here = new URL(".", import.meta.url).pathname;
await mkdir(`${here}dist`, { recursive: true });
await build({
  entryPoints: [`${here}src/main.ts`],
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  sourcemap: true,
  outfile: `${here}dist/app.js`,
  logLevel: "warning",
});
await copyFile(`${here}index.html`, `${here}dist/index.html`);
await copyFile(`${here}style.css`, `${here}dist/style.css`);
