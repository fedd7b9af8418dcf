// Load a DHAT file into Valgrind's own viewer (dh_view.html) in headless
// Chromium and check what it renders: no error, and the root's totals equal
// to the file's sums.
// usage: node view.mjs FILE.json [SCREENSHOT.png]
// env: DH_VIEW (default /usr/libexec/valgrind/dh_view.html),
//      CHROMIUM (default /usr/bin/chromium)
import { chromium } from "playwright-core";
import fs from "node:fs";

const file = process.argv[2];
const shot = process.argv[3];
const viewer = process.env.DH_VIEW || "/usr/libexec/valgrind/dh_view.html";
const fmt = new Intl.NumberFormat("en-US", { maximumFractionDigits: 2 });

function expected() {
  // sums as the viewer computes them; a file that does not parse expects nothing
  try {
    const d = JSON.parse(fs.readFileSync(file, "utf8"));
    const sum = (f) => d.pps.reduce((a, pp) => a + (pp[f] || 0), 0);
    return { tb: sum("tb"), tbk: sum("tbk"), gb: sum("gb"), eb: sum("eb"), bklt: d.bklt };
  } catch (e) {
    return null;
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--allow-file-access-from-files"],
});
let ok = true;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto("file://" + viewer);
  await page.setInputFiles("input[type=file]", file);
  // the viewer replaces "Loading..." with the tree or an error
  await page.waitForFunction(() => {
    const t = document.body.innerText;
    return !t.includes("Loading...") && (t.includes("PP 1/1") || document.querySelector(".error"));
  }, null, { timeout: 20000 }).catch(() => {});
  const text = await page.evaluate(() => document.body.innerText);
  const errEl = await page.evaluate(() => {
    const e = document.querySelector(".error");
    return e ? e.innerText : null;
  });
  if (shot) await page.screenshot({ path: shot, fullPage: false });
  if (errEl !== null) {
    console.log(`viewer error: ${errEl}`);
    ok = false;
  }
  if (pageErrors.length) {
    console.log(`page errors: ${pageErrors.join("; ")}`);
    ok = false;
  }
  const e = expected();
  if (e === null) {
    console.log("file does not parse as JSON");
    ok = false;
  } else {
    const want = [
      `Total:     ${fmt.format(e.tb)} bytes (100%`,
      `${fmt.format(e.tbk)} blocks (100%`,
    ];
    if (e.bklt) want.push(`At t-gmax: ${fmt.format(e.gb)} bytes (100%`, `At t-end:  ${fmt.format(e.eb)} bytes (100%`);
    for (const w of want) {
      if (!text.includes(w)) {
        console.log(`viewer does not show "${w}"`);
        ok = false;
      } else {
        console.log(`viewer shows "${w}"`);
      }
    }
  }
  if (!ok) console.log("--- viewer text (first 1500 chars)\n" + text.slice(0, 1500));
} finally {
  await browser.close();
}
console.log(ok ? "viewer: ok" : "viewer: FAILED");
process.exit(ok ? 0 : 1);
