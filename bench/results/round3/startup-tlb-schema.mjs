// Alternated start-up measurement of the server before (/work/main at f629f1e) and after (the i25-tlb worktree): bench/results/round3/startup-tlb-schema.txt. Run from the after tree with its node on PATH: node bench/results/round3/startup-tlb-schema.mjs 3
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

const trees = { before: "/work/main", after: "/work/wt-tlb" };
const account = "0:A447B73D62B9C689D968B3F6BEC6CA825D186C3F34A36ADD23601372E467502F";
const rounds = Number(process.argv[2] ?? 3);
const clk = 100; // USER_HZ
const rssMb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
const hwmMb = (pid) => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
const cpuMs = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / clk;
};

async function one(label, port) {
  const t0 = performance.now();
  const child = spawn(process.execPath, ["--max-semi-space-size=16", "--heap-growing-percent=100", "src/main.ts"], {
    cwd: trees[label],
    env: { ...process.env, DATABASE_URL: "postgres://postgres@127.0.0.1:5432/tonquery_200k", PORT: String(port), HOST: "127.0.0.1", ACCESS_LOG: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const ready = new Promise((resolve, reject) => {
    const on = (d) => { out += d; if (out.includes("tonquery ready")) resolve(); };
    child.stdout.on("data", on);
    child.stderr.on("data", on);
    child.on("exit", (c) => reject(new Error(`exited ${c}: ${out}`)));
  });
  await ready;
  const startMs = performance.now() - t0;
  const startCpu = cpuMs(child.pid);
  await sleep(6000 - (performance.now() - t0));
  const idleRss = rssMb(child.pid);
  const idleCpu = cpuMs(child.pid);
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/api/v3/traces?account=${account}&limit=100`);
    const body = await res.arrayBuffer();
    if (res.status !== 200 || body.byteLength < 1000) throw new Error(`status ${res.status}`);
  }
  const afterRss = rssMb(child.pid);
  const peak = hwmMb(child.pid);
  child.kill("SIGTERM");
  await new Promise((r) => child.on("exit", r));
  return { label, startMs: Math.round(startMs), startCpuMs: startCpu, idleCpuMs: idleCpu, idleRssMb: +idleRss.toFixed(1), rssAfter5Mb: +afterRss.toFixed(1), peakRssMb: +peak.toFixed(1) };
}

const results = [];
for (let r = 0; r < rounds; r++) {
  for (const label of r % 2 === 0 ? ["before", "after"] : ["after", "before"]) {
    const res = await one(label, 18090 + results.length);
    results.push(res);
    console.log(JSON.stringify(res));
    await sleep(1000);
  }
}
