#!/usr/bin/env node
// An external cronledger worker in Node.js 20: no dependencies, global fetch.
// It claims runs of `executor = "external"` jobs from `cronledger serve`
// (docs/api.md, external workers), heartbeats at a third of the lease, does
// each step, reports it and completes the attempt. Every write carries the
// fencing token; a 409 stale_lease means the lease moved on (the reaper
// took it back): the worker drops the run at once and writes nothing more.
//
// Each step of the example does one visible side effect at most once: it
// appends "RUN_KEY STEP attempt=N worker=ID" to the --out file, recorded as
// an effect (POST /v1/effects/begin, then /commit) with the claim's
// per-attempt credential, exactly like `cronledger effect run` in a
// subprocess step. A replayed effect is not redone; one in doubt (an earlier
// attempt began it and died) is reconciled by looking in the file.
//
//   CRONLEDGER_AUTH_TOKEN=... node examples/worker.js --server http://127.0.0.1:8377 \
//       --jobs daily_export --out /tmp/exports.txt
//
// Options: --server URL (default $CRONLEDGER_SERVER or http://127.0.0.1:8377)
//          --token-env NAME  variable holding a token of role worker or operate
//                            (default CRONLEDGER_AUTH_TOKEN)
//          --jobs A,B        the external jobs to claim (required)
//          --out FILE        where the steps append their lines (required)
//          --worker ID       this worker's id in the ledger (default host:pid)
//          --wait SECONDS    long-poll of each claim, 0-60 (default 30)
//          --step-ms N       simulated work before each step's effect (default 0)
//          --exit-when-idle  exit once a claim finds nothing
// SIGTERM or SIGINT: stop claiming, finish the run in hand, exit 0.
'use strict';

const fs = require('node:fs');
const os = require('node:os');

function parseArgs(argv) {
  const o = {
    server: process.env.CRONLEDGER_SERVER || 'http://127.0.0.1:8377',
    tokenEnv: 'CRONLEDGER_AUTH_TOKEN',
    jobs: [],
    out: '',
    worker: `${os.hostname()}:${process.pid}`,
    wait: 30,
    stepMs: 0,
    exitWhenIdle: false,
  };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--server') o.server = value().replace(/\/+$/, '');
    else if (a === '--token-env') o.tokenEnv = value();
    else if (a === '--jobs') o.jobs = value().split(',').filter(Boolean);
    else if (a === '--out') o.out = value();
    else if (a === '--worker') o.worker = value();
    else if (a === '--wait') o.wait = Number(value());
    else if (a === '--step-ms') o.stepMs = Number(value());
    else if (a === '--exit-when-idle') o.exitWhenIdle = true;
    else usage(`unknown option ${a}`);
  }
  if (o.jobs.length === 0) usage('--jobs is required');
  if (!o.out) usage('--out is required');
  if (!Number.isInteger(o.wait) || o.wait < 0 || o.wait > 60) usage('--wait must be 0-60');
  if (!Number.isInteger(o.stepMs) || o.stepMs < 0) usage('--step-ms must be >= 0');
  o.token = process.env[o.tokenEnv];
  if (!o.token) usage(`${o.tokenEnv} is not set: it holds the API token`);
  return o;
}

function usage(problem) {
  console.error(`worker.js: ${problem}`);
  process.exit(64);
}

const opts = parseArgs(process.argv);
const log = (msg) => console.log(`worker ${opts.worker}: ${msg}`);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The lease moved on: this attempt is over for us.
class Fenced extends Error {}

// POST (or GET) a JSON body; the answer's JSON. 409 stale_lease throws
// Fenced; any other non-2xx throws with the API's error and message.
// A request that got no answer at all (a kept-alive connection the server
// had closed, say) is sent again, up to 3 times. Repeating changes nothing
// twice: a begin names its `request`, a repeated heartbeat, commit or
// complete is harmless, and a step result already recorded is refused
// (409 conflict) without a change.
async function call(path, { body, credential, method = 'POST', signal } = {}) {
  let res;
  for (let attempt = 0; ; attempt++) {
    try {
      res = await fetch(`${opts.server}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${credential || opts.token}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      });
      break;
    } catch (e) {
      if (e.name === 'AbortError' || attempt >= 3) throw e;
      await sleep(200 * (attempt + 1));
    }
  }
  const answer = await res.json().catch(() => ({}));
  if (res.status === 409 && answer.error === 'stale_lease') {
    throw new Fenced(`${path}: ${answer.message}`);
  }
  if (!res.ok) {
    throw new Error(`${method} ${path}: HTTP ${res.status} ${answer.error}: ${answer.message}`);
  }
  return answer;
}

let stopping = false;
let claimAbort = null;
function onSignal(sig) {
  if (stopping) process.exit(130);  // a second signal: at once
  log(`${sig}: finishing the run in hand, claiming nothing more`);
  stopping = true;
  if (claimAbort) claimAbort.abort();
}
process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGINT', () => onSignal('SIGINT'));

// Whether the --out file already has the line of this run key and step.
function alreadyWritten(runKey, step) {
  let text = '';
  try {
    text = fs.readFileSync(opts.out, 'utf8');
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
  return text.split('\n').some((line) => line.startsWith(`${runKey} ${step} `));
}

// One step's side effect, at most once in effect for its key.
async function doStep(run, step, lease) {
  if (opts.stepMs > 0) await sleep(opts.stepMs);
  lease.check();
  const key = `${step}:${run.run_key}`;
  const effect = (path, extra) =>
    call(`/v1/effects/${path}`, {
      credential: run.credential,
      body: { run_id: run.id, fencing_token: run.fencing_token, key, ...extra },
    });
  let begun = await effect('begin', { request: `${opts.worker}:${run.fencing_token}:${step}` });
  if (begun.outcome === 'replay') return `replayed: ${begun.effect.result}`;
  if (begun.outcome === 'in_doubt') {
    // An earlier attempt began it and died: did its line get written?
    if (alreadyWritten(run.run_key, step)) {
      await effect('commit', { result: 'reconciled: written' });
      return 'reconciled';
    }
    await effect('fail', { exit_status: 1, result: 'reconciled: not written' });
    begun = await effect('begin', { request: `${opts.worker}:${run.fencing_token}:${step}:again` });
  }
  lease.check();  // never do the effect once fenced off
  const line = `${run.run_key} ${step} attempt=${run.attempt} worker=${opts.worker}\n`;
  fs.appendFileSync(opts.out, line);
  await effect('commit', { result: line });
  return 'written';
}

async function work(run) {
  const base = `/v1/runs/${run.id}`;
  const token = run.fencing_token;
  log(`claimed run ${run.id} ${run.run_key} attempt ${run.attempt} token ${token}`);
  let fenced = null;
  const lease = {
    check() {
      if (fenced) throw fenced;
    },
  };
  const beat = setInterval(() => {
    call(`${base}/heartbeat`, { body: { fencing_token: token, worker: opts.worker } }).catch((e) => {
      if (e instanceof Fenced) fenced = e;
      else log(`heartbeat failed (will retry): ${e.message}`);
    });
  }, run.heartbeat_seconds * 1000);
  try {
    const todo = run.steps.filter((s) => s.state !== 'succeeded').map((s) => s.name);
    for (const step of todo) {
      let result;
      try {
        result = await doStep(run, step, lease);
      } catch (e) {
        if (e instanceof Fenced) throw e;
        // The step failed: retryable (the server applies the job's retry policy).
        log(`step ${step} failed: ${e.message}`);
        lease.check();
        const answer = await call(`${base}/steps/${step}`, {
          body: { fencing_token: token, worker: opts.worker, outcome: 'retryable',
            output_tail: e.message },
        });
        log(`run ${run.id}: attempt ended ${answer.end_class}, run now ${answer.run.state}`);
        return;
      }
      lease.check();
      await call(`${base}/steps/${step}`, {
        body: { fencing_token: token, worker: opts.worker, exit_status: 0,
          output_tail: `${step}: ${result}\n` },
      });
    }
    const done = await call(`${base}/complete`, {
      body: { fencing_token: token, worker: opts.worker },
    });
    log(`run ${run.id} ${run.run_key}: ${done.run.state}`);
  } catch (e) {
    if (!(e instanceof Fenced)) throw e;
    log(`run ${run.id}: fenced off (409 stale_lease), dropping it: ${e.message}`);
  } finally {
    clearInterval(beat);
  }
}

async function main() {
  log(`claiming ${opts.jobs.join(', ')} from ${opts.server}`);
  while (!stopping) {
    let answer;
    claimAbort = new AbortController();
    try {
      answer = await call('/v1/claims', {
        body: { jobs: opts.jobs, wait: opts.wait, worker: opts.worker },
        signal: claimAbort.signal,
      });
    } catch (e) {
      if (stopping) break;
      log(`claim failed, retrying in 1s: ${e.message}`);
      await sleep(1000);
      continue;
    } finally {
      claimAbort = null;
    }
    if (!answer.run) {
      if (opts.exitWhenIdle) break;
      if (answer.retry_after) await sleep(answer.retry_after * 1000);
      continue;
    }
    try {
      await work(answer.run);
    } catch (e) {
      // Not recorded: the lease expires and the reaper decides.
      log(`run ${answer.run.id}: ${e.message}`);
    }
  }
  log('stopped');
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(`worker.js: ${e.stack || e}`);
    process.exit(1);
  },
);
