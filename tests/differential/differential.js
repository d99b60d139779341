#!/usr/bin/env node
// The differential test (#22): readingsd's DynamoDB-compatible API against dynalite, an
// independent DynamoDB implementation, on the same readings, request by request, through the
// AWS SDK for JavaScript v3.
//
//   node differential.js --readingsd http://127.0.0.1:PORT --mqtt-port PORT --work DIR
//
// readingsd must be running with an empty store, subscribed to the broker on --mqtt-port
// (differential_test.cc starts both). This script starts dynalite in memory on a free loopback
// port, loads it through CreateTable + BatchWriteItem and readingsd through MQTT (mosquitto_pub,
// one JSON array of readings per message), waits until readingsd holds every reading, then sends
// every case of cases.js to both and compares the answers.
//
// It exits 0 only when every difference is listed in expected-differences.js and every listed
// difference still occurs: the list is the truth about how readingsd differs, kept true.
'use strict';

const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

function fail(message) {
  console.error(`differential: ${message}`);
  process.exit(2);
}

let dynalite, sdk, lib;
try {
  dynalite = require('dynalite');
  sdk = require('@aws-sdk/client-dynamodb');
  lib = require('@aws-sdk/lib-dynamodb');
} catch (e) {
  fail(`${e.message}\nthe npm packages are missing: scripts/setup installs them (npm ci in tests/differential)`);
}

const readings = require('./readings');
const { TABLE, buildCases } = require('./cases');
const EXPECTED = require('./expected-differences');

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) fail(`bad arguments: ${argv.join(' ')}`);
    out[argv[i].slice(2)] = argv[i + 1];
  }
  // --self-check dynalite: a second dynalite stands in for readingsd (no broker needed), to show
  // that the comparison itself finds no difference between two equal stores.
  const required = out['self-check'] ? [] : ['readingsd', 'mqtt-port', 'work'];
  for (const r of required) {
    if (!out[r]) fail(`--${r} is required`);
  }
  return out;
}

function client(endpoint) {
  return new sdk.DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'differential', secretAccessKey: 'differential' },
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 5000, requestTimeout: 20000 },
  });
}

const COMMANDS = {
  Query: sdk.QueryCommand,
  GetItem: sdk.GetItemCommand,
  Scan: sdk.ScanCommand,
  BatchGetItem: sdk.BatchGetItemCommand,
  DescribeTable: sdk.DescribeTableCommand,
  ListTables: sdk.ListTablesCommand,
};

// --- Comparing ---------------------------------------------------------------------------------

// JSON with object keys sorted (attribute order in a map is no part of the answer) and BigInt
// written as {"BigInt": text}.
function canonical(value) {
  if (typeof value === 'bigint') return { BigInt: value.toString() };
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    if (value instanceof Uint8Array) return { Bytes: Buffer.from(value).toString('base64') };
    const out = {};
    for (const k of Object.keys(value).sort()) {
      if (value[k] !== undefined) out[k] = canonical(value[k]);
    }
    return out;
  }
  return value;
}

// The first place two canonical values differ, as "path: a | b".
function firstDifference(a, b, where = '') {
  const sa = JSON.stringify(a), sb = JSON.stringify(b);
  if (sa === sb) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = Array.isArray(a) ? [...Array(Math.max(a.length, b.length)).keys()] : [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    for (const k of keys) {
      // An answer on one side and an error on the other: show both whole.
      if (!(k in a) || !(k in b)) return `${where || '(answer)'}: ${short(a)} | ${short(b)}`;
      const d = firstDifference(a[k], b[k], `${where}${Array.isArray(a) ? `[${k}]` : `.${k}`}`);
      if (d) return d;
    }
  }
  return `${where || '(answer)'}: ${short(a)} | ${short(b)}`;
}

function short(v) {
  if (v === undefined) return '(absent)';
  const s = JSON.stringify(v);
  return s.length > 300 ? `${s.slice(0, 300)}…` : s;
}

function keyOf(item) {
  const part = (v) => (v && typeof v === 'object' ? v.S : v);
  return `${part(item.deviceId)}\u0000${part(item.readingTs)}`;
}

// Items in key order; items projected without their key, by their whole text.
function byKey(items) {
  const order = (x) => `${keyOf(x)}\u0000${JSON.stringify(canonical(x))}`;
  return [...items].sort((x, y) => (order(x) < order(y) ? -1 : order(x) > order(y) ? 1 : 0));
}

// --- Running a case ------------------------------------------------------------------------------

function errorOutcome(e) {
  if (!e.$metadata) throw e;  // not an answer: a network failure or a bug here
  return { error: { name: e.name, message: e.message, status: e.$metadata.httpStatusCode } };
}

async function send(c, op, input) {
  try {
    const { $metadata, ...answer } = await c.send(new COMMANDS[op](input));
    return { answer };
  } catch (e) {
    return errorOutcome(e);
  }
}

async function pages(c, op, input) {
  const out = [];
  let start;
  for (let page = 0; page < 500; ++page) {
    const r = await send(c, op, start ? { ...input, ExclusiveStartKey: start } : input);
    out.push(r);
    if (r.error || !r.answer.LastEvaluatedKey) return out;
    start = r.answer.LastEvaluatedKey;
  }
  out.push({ error: { name: 'TooManyPages', message: 'still a LastEvaluatedKey after 500 pages' } });
  return out;
}

// The union of pages: items by key, summed counts, capacity units, and the first error.
function union(list) {
  const items = [];
  let count = 0, scanned = 0, units = 0;
  for (const r of list) {
    if (r.error) return { error: r.error, itemsBeforeIt: items.length };
    items.push(...(r.answer.Items || []));
    count += r.answer.Count || 0;
    scanned += r.answer.ScannedCount || 0;
    units += r.answer.ConsumedCapacity ? r.answer.ConsumedCapacity.CapacityUnits : 0;
  }
  return { items: byKey(items), Count: count, ScannedCount: scanned, ...(units ? { CapacityUnits: units } : {}) };
}

async function docPaginate(c, paginator, input) {
  const doc = lib.DynamoDBDocumentClient.from(c);  // default settings: no wrapNumbers
  const items = [];
  let count = 0;
  try {
    for await (const page of paginator({ client: doc }, input)) {
      items.push(...(page.Items || []));
      ++count;
    }
  } catch (e) {
    if (e.$metadata) return errorOutcome(e);
    return { thrown: { name: e.name, message: e.message } };
  }
  return { pages: count, items };
}

async function run(c, kase) {
  // A copy: the SDK's paginators write their ExclusiveStartKey into the input they are given.
  const { op, kind } = kase;
  const input = structuredClone(kase.input);
  switch (op) {
    case 'DocQuery':
      return docPaginate(c, lib.paginateQuery, input);
    case 'DocScan': {
      const r = await docPaginate(c, lib.paginateScan, input);
      return r.items ? { items: byKey(r.items) } : r;  // scan order and page cuts are the implementation's
    }
    default:
      break;
  }
  switch (kind) {
    case 'one':
      return send(c, op, input);
    case 'pages':
      return pages(c, op, input);
    case 'set':
      return union(await pages(c, op, input));
    case 'mb': {
      const list = await pages(c, op, input);
      return { pages: list.length, ...union(list) };
    }
    case 'segments': {
      const seen = new Map();
      const all = [];
      for (let segment = 0; segment < input.TotalSegments; ++segment) {
        const u = union(await pages(c, op, { ...input, Segment: segment }));
        if (u.error) return { segment, ...u };
        for (const item of u.items) {
          if (seen.has(keyOf(item))) return { error: { name: 'Overlap', message: `${keyOf(item)} in segments ${seen.get(keyOf(item))} and ${segment}` } };
          seen.set(keyOf(item), segment);
        }
        all.push(...u.items);
      }
      return { items: byKey(all) };
    }
    case 'describe': {
      const r = await send(c, op, input);
      if (!r.answer) return r;
      const t = r.answer.Table;
      return {
        TableName: t.TableName, KeySchema: t.KeySchema, AttributeDefinitions: t.AttributeDefinitions,
        TableStatus: t.TableStatus, BillingMode: t.BillingModeSummary && t.BillingModeSummary.BillingMode,
        members: Object.keys(t).sort(), arnRegion: t.TableArn && t.TableArn.split(':')[3],
      };
    }
    case 'batch': {
      const r = await send(c, op, input);
      if (r.answer && r.answer.Responses) {
        for (const t of Object.keys(r.answer.Responses)) r.answer.Responses[t] = byKey(r.answer.Responses[t]);
      }
      return r;
    }
    default:
      throw new Error(`unknown kind ${kind}`);
  }
}

// --- Loading -------------------------------------------------------------------------------------

async function loadDynalite(c, all) {
  await c.send(new sdk.CreateTableCommand({
    TableName: TABLE,
    KeySchema: [{ AttributeName: 'deviceId', KeyType: 'HASH' }, { AttributeName: 'readingTs', KeyType: 'RANGE' }],
    AttributeDefinitions: [{ AttributeName: 'deviceId', AttributeType: 'S' }, { AttributeName: 'readingTs', AttributeType: 'S' }],
    BillingMode: 'PAY_PER_REQUEST',
  }));
  for (let i = 0; ; ++i) {
    const d = await c.send(new sdk.DescribeTableCommand({ TableName: TABLE }));
    if (d.Table.TableStatus === 'ACTIVE') break;
    if (i > 100) fail('dynalite: the table never became ACTIVE');
    await new Promise((r) => setTimeout(r, 20));
  }
  const batches = [];
  for (let i = 0; i < all.length; i += 25) batches.push(all.slice(i, i + 25));
  const worker = async () => {
    for (let b = batches.shift(); b; b = batches.shift()) {
      let request = { [TABLE]: b.map((r) => ({ PutRequest: { Item: readings.item(r) } })) };
      for (let tries = 0; Object.keys(request).length; ++tries) {
        if (tries > 20) fail('dynalite: BatchWriteItem keeps leaving items unprocessed');
        const out = await c.send(new sdk.BatchWriteItemCommand({ RequestItems: request }));
        request = out.UnprocessedItems || {};
      }
    }
  };
  await Promise.all([...Array(8)].map(worker));
}

function publishToReadingsd(all, mqttPort, work) {
  const messages = readings.messages(all);
  messages.forEach((m, i) => {
    const file = path.join(work, `message-${i}.json`);
    fs.writeFileSync(file, m.payload);
    // One message, QoS 1: mosquitto_pub exits once the broker has acknowledged it.
    const r = spawnSync('mosquitto_pub', ['-h', '127.0.0.1', '-p', String(mqttPort), '-q', '1', '-i', `differential-${process.pid}-${i}`,
      '-t', `sensors/${m.device}/readings`, '-f', file], { encoding: 'utf8', timeout: 20000 });
    if (r.error) fail(`mosquitto_pub: ${r.error.message} (scripts/setup installs mosquitto-clients)`);
    if (r.status !== 0) fail(`mosquitto_pub exited with ${r.status}: ${r.stderr}`);
  });
  return messages.length;
}

async function countIn(c, device) {
  let count = 0, start;
  for (;;) {
    const out = await c.send(new sdk.QueryCommand({
      TableName: TABLE, KeyConditionExpression: 'deviceId = :d', ExpressionAttributeValues: { ':d': { S: device } },
      Select: 'COUNT', ...(start ? { ExclusiveStartKey: start } : {}),
    }));
    count += out.Count;
    if (!out.LastEvaluatedKey) return count;
    start = out.LastEvaluatedKey;
  }
}

async function waitForReadingsd(c, deadlineMs) {
  let counts;
  while (Date.now() < deadlineMs) {
    counts = await Promise.all(readings.DEVICES.map((d) => countIn(c, d.id)));
    if (counts.every((n, i) => n === readings.DEVICES[i].count)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  fail(`readingsd did not store every reading: ${readings.DEVICES.map((d, i) => `${d.id} ${counts[i]}/${d.count}`).join(', ')} (see its log for rejected readings)`);
}

async function startDynalite() {
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return server;
}

// --- Main ----------------------------------------------------------------------------------------

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const all = readings.generate();

  const server = await startDynalite();
  const dyn = client(`http://127.0.0.1:${server.address().port}`);
  let rsd, published = 0, other;
  if (args['self-check']) {
    other = await startDynalite();
    rsd = client(`http://127.0.0.1:${other.address().port}`);
    await loadDynalite(rsd, all);
  } else {
    rsd = client(args.readingsd);
    published = publishToReadingsd(all, args['mqtt-port'], args.work);
  }
  await loadDynalite(dyn, all);
  await waitForReadingsd(rsd, Date.now() + 60000);
  console.log(`differential: ${all.length} readings over ${readings.DEVICES.length} devices in dynalite and in readingsd ` +
    `(${published} MQTT messages), ${((Date.now() - started) / 1000).toFixed(1)} s`);

  const cases = buildCases(all);
  const known = new Set(cases.map((k) => k.name));
  const unexpected = [], stale = [], expected = [];
  const dump = {};
  for (const kase of cases) {
    // Both at once: dynalite works in this process while readingsd answers in its own.
    const [want, got] = (await Promise.all([run(dyn, kase), run(rsd, kase)])).map(canonical);
    dump[kase.name] = { input: kase.input, dynalite: want, readingsd: got };
    // The DocumentClient cases show that its default settings page through 20-digit numbers: the
    // data must let them, whatever readingsd answers.
    if (kase.op.startsWith('Doc') && !want.items) unexpected.push(`${kase.name}\n    dynalite: ${short(want)} (the readings must page through the DocumentClient)`);
    const difference = firstDifference(want, got);
    const listed = Object.prototype.hasOwnProperty.call(EXPECTED, kase.name);
    if (difference && !listed) unexpected.push(`${kase.name}\n    ${difference}`);
    else if (difference) expected.push(`${kase.name}\n    ${difference}\n    listed because: ${EXPECTED[kase.name]}`);
    else if (listed && !args['self-check']) stale.push(kase.name);
  }
  // DIFFERENTIAL_DUMP=FILE: every request and both answers, for a person to read.
  if (process.env.DIFFERENTIAL_DUMP) fs.writeFileSync(process.env.DIFFERENTIAL_DUMP, JSON.stringify(dump, null, 1));
  const unknown = Object.keys(EXPECTED).filter((name) => !known.has(name));

  if (process.env.DIFFERENTIAL_VERBOSE) for (const e of expected) console.log(`expected difference: ${e}`);
  console.log(`differential: ${cases.length} cases, ${cases.length - unexpected.length - expected.length} answered alike, ` +
    `${expected.length} listed differences, ${unexpected.length} unlisted differences, ${stale.length} listed but alike, ` +
    `${((Date.now() - started) / 1000).toFixed(1)} s in all`);
  if (args['self-check']) unexpected.push(...expected);
  for (const u of unexpected) console.log(`UNLISTED DIFFERENCE (dynalite | readingsd): ${u}`);
  for (const s of stale) console.log(`LISTED BUT NO LONGER DIFFERENT (remove it from expected-differences.js): ${s}`);
  for (const n of unknown) console.log(`LISTED FOR NO CASE (fix the name in expected-differences.js): ${n}`);
  server.close();
  if (other) other.close();
  process.exit(unexpected.length || stale.length || unknown.length ? 1 : 0);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exit(2);
});
