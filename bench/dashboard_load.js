#!/usr/bin/env node
// The dashboard's first load (issue 7, Performance), run by
// bench/api_bench.sh against its serve over the 1,000,000-run ledger:
// headless Debian chromium opens the dashboard in a fresh browser context
// (empty cache) with a logged-in session cookie and the time is taken from
// the navigation's start until the overview holds a row for every job.
//
//   node bench/dashboard_load.js LOGIN_LINK JOBS RUNS
//
// Prints one line per run and a last line "median MS" (milliseconds).
// NODE_PATH must hold playwright-core; CHROMIUM defaults to /usr/bin/chromium.
'use strict';

const {chromium} = require('playwright-core');

async function main() {
  const [link, jobsText, runsText] = process.argv.slice(2);
  const jobs = Number(jobsText);
  const runs = Number(runsText);
  if (!link || !(jobs > 0) || !(runs > 0)) {
    console.error('usage: dashboard_load.js LOGIN_LINK JOBS RUNS');
    process.exit(2);
  }
  const base = link.replace(/\/login\?.*$/, '');
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    // Log in once (the link is single-use); every measured load reuses the
    // session cookie in a context of its own, so nothing comes from a cache.
    const login = await browser.newContext({viewport: {width: 1366, height: 768}});
    const first = await login.newPage();
    await first.goto(link);
    await first.waitForSelector('#overview', {timeout: 120000});
    const cookies = await login.cookies();
    await login.close();

    const times = [];
    for (let i = 0; i < runs; ++i) {
      const context = await browser.newContext({viewport: {width: 1366, height: 768}});
      await context.addCookies(cookies);
      const page = await context.newPage();
      const start = Date.now();
      await page.goto(`${base}/`);
      await page.waitForFunction(
          (n) => document.querySelectorAll('#overview tr[data-job]').length >= n, jobs,
          {timeout: 120000, polling: 'raf'});
      const ms = Date.now() - start;
      times.push(ms);
      console.log(`load ${i + 1}: overview with ${jobs} jobs filled in ${ms} ms`);
      await context.close();
    }
    times.sort((a, b) => a - b);
    console.log(`median ${times[Math.floor(times.length / 2)]}`);
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
