// Drives Debian's chromium (headless, through playwright-core) through the readingsd page
// against a real daemon fed by a real mosquitto. Run by ui_test.cc:
//   node ui.js --readingsd URL --mqtt-port N --token T --out DIR
// Exits 0 when every check passes; prints each failure.
'use strict';
const { chromium } = require('playwright-core');
const { execFileSync } = require('child_process');
const path = require('path');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].slice(2)] = process.argv[i + 1];
const base = args.readingsd;
const hostile = '<img src=x onerror=alert(1)>';
let failures = 0;
function check(ok, what) {
  console.log((ok ? 'ok   ' : 'FAIL ') + what);
  if (!ok) failures++;
}

function publish(device, readings) {
  execFileSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', args['mqtt-port'], '-q', '1',
    '-t', `sensors/${device}/readings`, '-m', JSON.stringify(readings)]);
}

async function waitForReadings(count) {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(base + '/v1/devices', { headers: { Authorization: 'Bearer ' + args.token } });
    const body = await res.json();
    if (body.devices.reduce((n, d) => n + d.readings, 0) >= count) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the readings did not arrive');
}

async function waitForReady() {
  for (let i = 0; i < 300; i++) {
    const res = await fetch(base + '/readyz', { headers: { Authorization: 'Bearer ' + args.token } });
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('readingsd did not become ready');
}

async function main() {
  await waitForReady();
  // ui-a: 30 readings a minute apart up to a minute ago; ui-b: 2 readings an hour apart, the
  // last a day ago, so it is silent far beyond its usual interval.
  const now = Math.floor(Date.now() / 1000) * 1000;
  const a = [];
  for (let i = 0; i < 30; i++) {
    a.push({ readingTs: new Date(now - (30 - i) * 60000).toISOString(), temperature: 20 + i / 2, note: hostile });
  }
  publish('ui-a', a);
  publish('ui-b', [{ readingTs: new Date(now - 25 * 3600000).toISOString(), temperature: 1 },
                   { readingTs: new Date(now - 24 * 3600000).toISOString(), temperature: 2 }]);
  await waitForReadings(32);

  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));

  // Auth is on: the page asks for the token, then keeps it for the tab.
  await page.goto(base + '/ui/');
  await page.locator('#token-form').waitFor({ state: 'visible' });
  check(true, 'the token prompt is shown when the API answers 401');
  await page.screenshot({ path: path.join(args.out, 'ui-token.png') });
  await page.fill('#token', args.token);
  await page.click('#token-form button');

  // Fleet: both devices, the silent one marked, the hostile string shown as text.
  await page.locator('#devices tbody tr').nth(1).waitFor();
  const ids = await page.locator('#devices tbody td:first-child a').allTextContents();
  check(JSON.stringify(ids) === JSON.stringify(['ui-a', 'ui-b']), 'the fleet lists ui-a and ui-b: ' + JSON.stringify(ids));
  const classes = await page.locator('#devices tbody tr').evaluateAll((rows) => rows.map((r) => r.className));
  check(classes[0] === '' && classes[1] === 'silent', 'ui-b (silent a day, usually hourly) is marked silent, ui-a not: ' + JSON.stringify(classes));
  const values = await page.locator('#devices tbody tr').nth(0).locator('td').nth(2).textContent();
  check(values.includes(hostile), 'the attribute string is shown as text: ' + values);
  check(await page.locator('#devices img').count() === 0, 'no element was made from the attribute string');
  check(await page.locator('#hot tbody tr').count() >= 1, 'the hot partitions are listed');
  await page.screenshot({ path: path.join(args.out, 'ui-fleet.png'), fullPage: true });

  // Device: chart drawn, table paged by cursor.
  await page.click('text=ui-a');
  await page.locator('#readings tbody tr').first().waitFor();
  await page.locator('#chart canvas').first().waitFor();
  const inked = await page.evaluate(() => [...document.querySelectorAll('#chart canvas')].some((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
    return false;
  }));
  check(inked, 'the chart canvas is drawn on');
  const first = await page.locator('#readings tbody td:first-child').allTextContents();
  check(first.length === 20 && first[0] === a[0].readingTs.replace('.000Z', '.000000000Z'),
        'the table shows the first 20 readings: ' + first[0]);
  await page.screenshot({ path: path.join(args.out, 'ui-device.png'), fullPage: true });
  await page.click('#readings-more');
  // The page's CSP forbids eval, so wait through a locator rather than waitForFunction.
  await page.locator('#readings tbody tr').nth(10).waitFor({ state: 'detached' });
  const second = await page.locator('#readings tbody td:first-child').allTextContents();
  check(second[0] === a[20].readingTs.replace('.000Z', '.000000000Z') && second.length === 10,
        'the next page holds readings 21 to 30: ' + second[0]);
  check(await page.locator('#readings-more').isHidden(), 'no next page after the last');

  check(dialogs.length === 0, 'no script ran from the data (dialogs: ' + JSON.stringify(dialogs) + ')');
  check(errors.length === 0, 'no page errors: ' + JSON.stringify(errors));
  await browser.close();
  process.exit(failures ? 1 : 0);
}

main().catch((e) => { console.log('FAIL ' + (e.stack || e)); process.exit(1); });
