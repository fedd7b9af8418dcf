// Load files into tools/mi-heapview.html in headless Chromium and report
// what the page shows: the summary it publishes on window.miHeapView, the
// text of #error and #totals, the canvases drawn, page errors and any
// request that is not the viewer file itself (the viewer must not touch the
// network).
//
// usage: node view.mjs [--view map|sizes|diff|stats] [--pick low|new] [--shot PNG] FILE...
//        node view.mjs --jobs JOBS.json
// JOBS.json: [{"id": "...", "files": [...], "view": "map", "shot": "x.png", "pick": "low",
//              "drop": true, "then": [...]}, ...]   (all but id and files optional);
// one browser serves every job, a fresh page each. Each result is printed as
// one line "result <json>". Exit status: 0 when every job got a final status
// ("ok" or "error") without page errors or foreign requests, 1 otherwise; the
// caller judges the contents.
// env: CHROMIUM (default /usr/bin/chromium), HEAPVIEW (default
//      tools/mi-heapview.html in this checkout)
import puppeteer from "puppeteer-core";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const viewer = path.resolve(process.env.HEAPVIEW || path.join(here, "../../../tools/mi-heapview.html"));
const viewerUrl = pathToFileURL(viewer).href;

function usage() {
  console.error("usage: node view.mjs [--view map|sizes|diff|stats] [--pick low|new] [--shot PNG] FILE...\n       node view.mjs --jobs JOBS.json");
  process.exit(2);
}

let jobs = [];
{
  const argv = process.argv.slice(2);
  const one = { id: "cli", files: [], view: null, shot: null, pick: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--jobs") jobs = JSON.parse(fs.readFileSync(argv[++i] ?? usage(), "utf8"));
    else if (a === "--view") one.view = argv[++i] ?? usage();
    else if (a === "--shot") one.shot = argv[++i] ?? usage();
    else if (a === "--pick") one.pick = argv[++i] ?? usage();
    else if (a.startsWith("--")) usage();
    else one.files.push(a);
  }
  if (one.files.length) jobs.push(one);
  if (!jobs.length) usage();
}

async function runJob(browser, job) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  const pageErrors = [], foreign = [];
  page.on("pageerror", (e) => pageErrors.push(String(e && e.message ? e.message : e)));
  page.on("console", (m) => { if (m.type() === "error") pageErrors.push("console: " + m.text()); });
  page.on("request", (r) => { if (r.url() !== viewerUrl && !r.url().startsWith("data:")) foreign.push(r.url()); });
  const res = { id: job.id, files: job.files.map((f) => path.basename(f)) };
  try {
    await page.goto(viewerUrl, { waitUntil: "load" });
    const input = await page.$("input#files");
    if (!input) throw new Error("the viewer has no input#files");
    // each load: through the file input, or (drop) as a drop of the files on
    // the page; "then" loads more files into the same page afterwards
    const loads = [job.files].concat(job.then ? [job.then] : []);
    for (let i = 0; i < loads.length; i++) {
      const files = loads[i].map((f) => path.resolve(f));
      if (job.drop && i === 0) {
        const payload = files.map((f) => ({ name: path.basename(f), b64: fs.readFileSync(f).toString("base64") }));
        await page.evaluate((list) => {
          const dt = new DataTransfer();
          for (const f of list) {
            const bin = atob(f.b64), u8 = new Uint8Array(bin.length);
            for (let k = 0; k < bin.length; k++) u8[k] = bin.charCodeAt(k);
            dt.items.add(new File([u8], f.name));
          }
          document.body.dispatchEvent(new DragEvent("drop", { bubbles: true, cancelable: true, dataTransfer: dt }));
        }, payload);
      } else {
        await input.uploadFile(...files);
      }
      await page.waitForFunction((n) => window.miHeapView && window.miHeapView.loadSeq === n &&
        ["ok", "error"].includes(window.miHeapView.status), { timeout: 20000 }, i + 1);
    }
    if (job.view) {
      await page.click(`nav.tabs button[data-view="${job.view}"]`);
      // click a page cell (pick "low": a page with live blocks filling under
      // half of it; "new": one that appeared since A) so that its details
      // stand pinned beside the map in the picture
      if (job.pick && (job.view === "map" || job.view === "diff")) {
        const box = await page.evaluate((v, pick) => {
          for (const cv of document.querySelectorAll(`#view-${v} canvas`)) {
            const hits = (cv._hits || []).filter((x) => x.page && !x.ghost);
            const h = pick === "new" ? hits.find((x) => x.isNew) : hits.find((x) => x.page.used > 0 && x.page.occupancy < 0.5);
            if (!h) continue;
            const rc = cv.getBoundingClientRect();
            return { x: rc.left + h.x + h.w / 2, y: rc.top + h.y - cv._y0 + h.h / 2 };
          }
          return null;
        }, job.view, job.pick);
        if (box) {
          await page.mouse.click(box.x, box.y);
          await page.mouse.move(2, 2);
        }
        res.picked = !!box;
      }
    }
    Object.assign(res, await page.evaluate(() => {
      const err = document.getElementById("error");
      const shown = (el) => !!el && !el.hidden && el.offsetParent !== null;
      const canvases = [...document.querySelectorAll("canvas")];
      return {
        summary: window.miHeapView,
        errorShown: shown(err),
        errorText: err ? err.innerText : null,
        totalsText: document.getElementById("totals").innerText,
        canvasCount: canvases.length,
        statsCircles: document.querySelectorAll("#stats-svg circle.pt").length,
        detailsText: [...document.querySelectorAll("section.view:not(.hidden) .details-body")].map((d) => d.innerText).join("\n"),
        statsTables: [...document.querySelectorAll("#stats-tables h3")].map((h) => h.innerText),
        statsText: document.getElementById("stats-tables").innerText,
        diffTableRows: document.querySelectorAll("#diff-table tr[data-bs]").length,
        // nothing half-drawn: every view's container empty
        viewsEmpty: ["maps", "sizes", "diff-table", "diff-map", "stats-chart", "stats-tables"]
          .every((id) => document.getElementById(id).childElementCount === 0),
        sizeTableRows: document.querySelectorAll("#sizes tr[data-bs]").length,
      };
    }));
    if (job.shot) {
      fs.mkdirSync(path.dirname(path.resolve(job.shot)), { recursive: true });
      await page.screenshot({ path: job.shot, fullPage: true });
      res.shot = job.shot;
    }
  } catch (e) {
    res.failure = String(e && e.message ? e.message : e);
  }
  res.pageErrors = pageErrors;
  res.foreignRequests = foreign;
  await page.close();
  return res;
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--force-device-scale-factor=1"],
});
let ok = true;
try {
  for (const job of jobs) {
    const r = await runJob(browser, job);
    if (r.failure || r.pageErrors.length || r.foreignRequests.length) ok = false;
    if (job.id === "cli" && jobs.length === 1) {
      const s = r.summary || {};
      console.log(`status: ${s.status}${s.error ? " (" + s.error + ")" : ""}`);
      for (const sn of s.snapshots || [])
        console.log(`snapshot ${sn.name}: ${sn.pageCount} pages, ${sn.arenaCount} arenas, ${sn.heapCount} heaps, ` +
          `committed ${sn.committed}, live ${sn.live}, cells drawn ${sn.cellsDrawn}`);
      if (s.statsCount) console.log(`stats dumps: ${s.statsCount}, points drawn per line ${JSON.stringify(s.statsPoints)}`);
      if (s.diff) console.log(`diff ${s.diff.a} -> ${s.diff.b}: ${s.diffRows.length} rows, ${s.diff.appeared} pages appeared, ${s.diff.disappeared} disappeared`);
      if (r.failure) console.log(`failure: ${r.failure}`);
      if (r.pageErrors.length) console.log(`page errors: ${r.pageErrors.join("; ")}`);
      if (r.foreignRequests.length) console.log(`requests besides the viewer: ${r.foreignRequests.join(" ")}`);
    }
    console.log("result " + JSON.stringify(r));
  }
} finally {
  await browser.close();
}
process.exit(ok ? 0 : 1);
