// The peers of cronledger on PostgreSQL, for bench/pg_bench.sh: graphile-worker
// and pg-boss processing no-op jobs on the server the benchmark started,
// each in a fresh database (the URL names it), and graphile-worker's
// add-to-start latency.
//
//   node peers.js graphile --url URL --jobs N --mode default|best
//   node peers.js pgboss   --url URL --jobs N --mode default|best [--workers N --batch-size N]
//   node peers.js graphile-latency --url URL [--samples N] [--bursts N]
//
// Throughput: the N jobs are inserted first (untimed, in bulk), then the
// workers start and the clock runs until the database shows every job
// completed (graphile-worker deletes a completed job; pg-boss marks it
// `completed`), so a job counts only once its completion is committed, as
// cronledger's runs do. A configuration that would take longer than
// --max-seconds (default 600) is stopped there and its rate is the jobs
// completed so far over the time (printed as time-boxed).
//
// Figures go to stdout as `RESULT <tab> name <tab> value <tab> unit` lines.
'use strict'

const { performance } = require('perf_hooks')
const pg = require('pg')

function parseArgs (argv) {
  const o = { command: argv[0], jobs: 20000, mode: 'default', samples: 200, bursts: 3, maxSeconds: 600 }
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]
    const v = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`)
      return argv[++i]
    }
    if (a === '--url') o.url = v()
    else if (a === '--jobs') o.jobs = Number(v())
    else if (a === '--mode') o.mode = v()
    else if (a === '--samples') o.samples = Number(v())
    else if (a === '--bursts') o.bursts = Number(v())
    else if (a === '--max-seconds') o.maxSeconds = Number(v())
    else if (a === '--workers') o.workers = Number(v())
    else if (a === '--batch-size') o.batchSize = Number(v())
    else throw new Error(`unknown argument ${a}`)
  }
  if (!o.url) throw new Error('--url is required')
  if (!['default', 'best'].includes(o.mode)) throw new Error('--mode is default or best')
  return o
}

const log = (...args) => console.error('peers:', ...args)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function result (name, value, unit) {
  process.stdout.write(`RESULT\t${name}\t${value.toFixed(3)}\t${unit}\n`)
}

function percentile (values, p) {
  const v = [...values].sort((a, b) => a - b)
  return v[Math.min(v.length - 1, Math.floor(p * v.length))]
}
const median = (values) => percentile(values, 0.5)

// Polls `countDone()` until it reaches `jobs` or the time box ends.
async function waitDone (countDone, jobs, t0, maxSeconds) {
  let done = 0
  for (;;) {
    done = await countDone()
    if (done >= jobs) break
    if (performance.now() - t0 > maxSeconds * 1000) return { done, boxed: true, t1: performance.now() }
    await sleep(done === 0 ? 20 : 10)
  }
  return { done, boxed: false, t1: performance.now() }
}

function report (name, jobs, { done, boxed, t1 }, t0, extra) {
  const seconds = (t1 - t0) / 1000
  const rate = done / seconds
  log(`${name}: ${done} of ${jobs} jobs in ${seconds.toFixed(2)} s: ${rate.toFixed(0)} jobs/s` +
    (boxed ? ` (time-boxed at ${seconds.toFixed(0)} s; all ${jobs} would take about ${(jobs / Math.max(rate, 1e-9) / 3600).toFixed(1)} h)` : '') +
    (extra ? `; ${extra}` : ''))
  result(name, rate, boxed ? 'jobs/s time-boxed' : 'jobs/s')
}

// ---- graphile-worker ------------------------------------------------------------

function quietLogger (gw) {
  // Warnings and errors only: the default logger prints a line per job
  // (cronledger's benchmark also logs at warn).
  return new gw.Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning') console.error(`graphile-worker ${level}: ${message}`)
  })
}

// graphile-worker's options: its defaults, or the configuration of its
// documentation's performance page (worker.graphile.org/docs/performance):
// concurrentJobs 24, maxPoolSize 25, localQueue.size 500 and batched
// completion (completeJobBatchDelay 0, failJobBatchDelay 0).
function graphileOptions (gw, url, mode, taskList) {
  const base = { connectionString: url, taskList, logger: quietLogger(gw), noHandleSignals: true }
  if (mode === 'default') return base
  return {
    ...base,
    concurrency: 24,
    maxPoolSize: 25,
    preset: {
      worker: {
        concurrentJobs: 24,
        maxPoolSize: 25,
        localQueue: { size: 500 },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0
      }
    }
  }
}

async function graphile (o) {
  const gw = require('graphile-worker')
  const version = require('graphile-worker/package.json').version
  const utils = await gw.makeWorkerUtils({ connectionString: o.url, logger: quietLogger(gw) })
  await utils.migrate()
  for (let i = 0; i < o.jobs; i += 1000) {
    const specs = []
    for (let j = i; j < Math.min(o.jobs, i + 1000); j++) specs.push({ identifier: 'noop', payload: { j } })
    await utils.addJobs(specs)
  }
  await utils.release()
  const client = new pg.Client({ connectionString: o.url })
  await client.connect()
  const queued = Number((await client.query('SELECT count(*) FROM graphile_worker._private_jobs')).rows[0].count)
  if (queued !== o.jobs) throw new Error(`queued ${queued} jobs, want ${o.jobs}`)
  const name = `graphile-worker-${o.mode}`
  log(`${name}: graphile-worker ${version}, ${o.jobs} jobs queued; options ${JSON.stringify(graphileOptions(gw, '', o.mode, {}).preset || { defaults: true })}`)
  let ran = 0
  const t0 = performance.now()
  const runner = await gw.run(graphileOptions(gw, o.url, o.mode, { noop: async () => { ran++ } }))
  const r = await waitDone(async () => {
    const left = Number((await client.query('SELECT count(*) FROM graphile_worker._private_jobs')).rows[0].count)
    return o.jobs - left
  }, o.jobs, t0, o.maxSeconds)
  await runner.stop()
  await client.end()
  if (!r.boxed && ran !== o.jobs) throw new Error(`the handler ran ${ran} times for ${o.jobs} jobs`)
  report(name, o.jobs, r, t0, `handler calls ${ran}`)
}

// graphile-worker's add-to-start latency: one job at a time (its
// documentation's headline figure), then bursts of 1,000 added in one
// addJobs call (cronledger's fire benchmark: 1,000 runs due at once).
async function graphileLatency (o) {
  const gw = require('graphile-worker')
  const utils = await gw.makeWorkerUtils({ connectionString: o.url, logger: quietLogger(gw) })
  await utils.migrate()
  const pending = new Map()
  const taskList = {
    lat: async (payload) => {
      const now = performance.now()
      const w = pending.get(payload.k)
      if (w) w(now)
    }
  }
  // Single: the default configuration (LISTEN/NOTIFY wakes the worker).
  let runner = await gw.run(graphileOptions(gw, o.url, 'default', taskList))
  await sleep(500)
  const single = []
  for (let i = 0; i < o.samples + 10; i++) {
    const started = new Promise((resolve) => pending.set(`s${i}`, resolve))
    const t0 = performance.now()
    await utils.addJob('lat', { k: `s${i}` })
    const t1 = await started
    if (i >= 10) single.push(t1 - t0) // the first 10 warm up
  }
  await runner.stop()
  log(`graphile-worker add-to-start, one job at a time (default options), ${single.length} samples: ` +
    `p50 ${percentile(single, 0.5).toFixed(2)} ms, p99 ${percentile(single, 0.99).toFixed(2)} ms, max ${Math.max(...single).toFixed(2)} ms`)
  result('graphile-worker-latency-single-p50', percentile(single, 0.5), 'ms')
  result('graphile-worker-latency-single-p99', percentile(single, 0.99), 'ms')

  // Bursts of 1,000, in the best configuration and in the default one.
  for (const mode of ['best', 'default']) {
    runner = await gw.run(graphileOptions(gw, o.url, mode, taskList))
    await sleep(500)
    const p50s = []
    const p99s = []
    for (let b = 0; b < o.bursts + 1; b++) {
      const lat = []
      const all = []
      const specs = []
      const t0 = performance.now()
      for (let i = 0; i < 1000; i++) {
        const k = `${mode}${b}-${i}`
        all.push(new Promise((resolve) => pending.set(k, (t) => { lat.push(t - t0); resolve() })))
        specs.push({ identifier: 'lat', payload: { k } })
      }
      await utils.addJobs(specs)
      await Promise.all(all)
      if (b === 0) continue // warm-up
      p50s.push(percentile(lat, 0.5))
      p99s.push(percentile(lat, 0.99))
      log(`graphile-worker add-to-start, 1,000 jobs in one addJobs call (${mode}): p50 ${percentile(lat, 0.5).toFixed(1)} ms, p99 ${percentile(lat, 0.99).toFixed(1)} ms, max ${Math.max(...lat).toFixed(1)} ms`)
      await sleep(300)
    }
    await runner.stop()
    result(`graphile-worker-latency-burst-${mode}-p50`, median(p50s), 'ms')
    result(`graphile-worker-latency-burst-${mode}-p99`, median(p99s), 'ms')
  }
  await utils.release()
}

// ---- pg-boss ------------------------------------------------------------------------

// pg-boss 10's work() options are batchSize (jobs per fetch, default 1) and
// pollingIntervalSeconds (default 2, at least 0.5); one work() call is one
// polling loop, so several workers are several work() calls. A loop fetches
// a batch, runs the handler on it, completes it, and waits out the rest of
// its polling interval before the next fetch, so a configuration's ceiling
// is workers x batchSize / interval. pg-boss documents the options, not
// values: 8 x 200 at 0.5 s was the fastest of a sweep on the reference
// machine (8 x 100, 200, 250, 300, 500, 1000; 4 x 500, 2000; 6 x 300;
// 12 x 200; 16 x 200, 500, 1000; docs/benchmarks.md): larger batches and
// more loops were slower, not faster.
const PGBOSS_BEST = { workers: 8, batchSize: 200, pollingIntervalSeconds: 0.5 }

async function pgboss (o) {
  const PgBoss = require('pg-boss')
  const version = require('pg-boss/package.json').version
  const best = o.mode === 'best'
  // --workers and --batch-size override the best configuration (to try others).
  const cfg = { ...PGBOSS_BEST, ...(o.workers ? { workers: o.workers } : {}), ...(o.batchSize ? { batchSize: o.batchSize } : {}) }
  const boss = new PgBoss(best
    ? { connectionString: o.url, max: cfg.workers + 4 }
    : { connectionString: o.url })
  boss.on('error', (e) => console.error('pg-boss error:', e.message))
  await boss.start()
  await boss.createQueue('noop')
  for (let i = 0; i < o.jobs; i += 1000) {
    const jobs = []
    for (let j = i; j < Math.min(o.jobs, i + 1000); j++) jobs.push({ name: 'noop', data: { j } })
    await boss.insert(jobs)
  }
  const client = new pg.Client({ connectionString: o.url })
  await client.connect()
  const count = async (state) => Number((await client.query(
    "SELECT count(*) FROM pgboss.job WHERE name = 'noop' AND ($1::text IS NULL OR state = $1::pgboss.job_state)",
    [state])).rows[0].count)
  const queued = await count(null)
  if (queued !== o.jobs) throw new Error(`queued ${queued} jobs, want ${o.jobs}`)
  const custom = best && (o.workers || o.batchSize)
  const name = custom ? `pg-boss-${cfg.workers}x${cfg.batchSize}` : `pg-boss-${o.mode}`
  const workers = best ? cfg.workers : 1
  const options = best ? { batchSize: cfg.batchSize, pollingIntervalSeconds: cfg.pollingIntervalSeconds } : {}
  log(`${name}: pg-boss ${version}, ${o.jobs} jobs queued; ${workers} work() loop(s) with ${JSON.stringify(options)}`)
  let ran = 0
  const t0 = performance.now()
  for (let w = 0; w < workers; w++) {
    await boss.work('noop', options, async (jobs) => { ran += jobs.length })
  }
  const r = await waitDone(() => count('completed'), o.jobs, t0, o.maxSeconds)
  await boss.stop({ graceful: true, wait: true, timeout: 10000 })
  await client.end()
  report(name, o.jobs, r, t0, `handler got ${ran} jobs`)
}

async function main () {
  const o = parseArgs(process.argv.slice(2))
  if (o.command === 'graphile') await graphile(o)
  else if (o.command === 'pgboss') await pgboss(o)
  else if (o.command === 'graphile-latency') await graphileLatency(o)
  else throw new Error(`unknown command ${o.command}`)
}

main().then(() => process.exit(0), (e) => {
  console.error('peers:', e && e.stack ? e.stack : e)
  process.exit(1)
})
