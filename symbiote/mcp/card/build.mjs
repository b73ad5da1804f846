// Builds the memory card: src/card.js bundled by esbuild, src/card.css and the bundle inlined into
// src/card.html, with a Content-Security-Policy that allows exactly those two inline blocks (by
// their sha256) and nothing else. The output is deterministic: the same sources give the same bytes.
//
//   node build.mjs [--out path/to/memory-card.html]   (default: ./memory-card.html)

import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const outIndex = process.argv.indexOf("--out");
const out = outIndex > 0 ? resolve(process.argv[outIndex + 1]) : join(here, "memory-card.html");

// zod's namespace object re-exports its ~40 message locales, so every one of them would be inlined
// though only English is ever used (zod's default): the index of locales is swapped for English alone.
const englishOnly = {
  name: "zod-english-only",
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";',
      loader: "js",
      resolveDir: dirname(args.path),
    }));
  },
};

const bundled = await build({
  entryPoints: [join(here, "src", "card.js")],
  absWorkingDir: here,
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2022",
  minify: true,
  legalComments: "none",
  charset: "utf8",
  write: false,
  logLevel: "warning",
  plugins: [englishOnly],
});
const script = bundled.outputFiles[0].text.trimEnd();
const style = (await readFile(join(here, "src", "card.css"), "utf8")).trim();
const template = await readFile(join(here, "src", "card.html"), "utf8");

// An inline block must not be able to close its own element or open a comment the parser honours.
for (const [name, text, closer] of [
  ["script", script, /<\/script|<!--/i],
  ["style", style, /<\/style/i],
]) {
  if (closer.test(text)) throw new Error(`the inlined ${name} contains ${closer}: it would break out of its element`);
}

const sha256 = (text) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
const csp = [
  "default-src 'none'",
  `script-src ${sha256(script)}`,
  `style-src ${sha256(style)}`,
  "img-src 'none'",
  "font-src 'none'",
  "media-src 'none'",
  "connect-src 'none'",
  "frame-src 'none'",
  "worker-src 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const slots = { "{{CSP}}": csp, "{{STYLE}}": style, "{{SCRIPT}}": script };
let html = template;
for (const [slot, value] of Object.entries(slots)) {
  if (html.split(slot).length !== 2) throw new Error(`src/card.html must hold ${slot} exactly once`);
  html = html.replace(slot, () => value);
}
await writeFile(out, html, "utf8");
console.log(`${out}: ${Buffer.byteLength(html)} bytes`);
