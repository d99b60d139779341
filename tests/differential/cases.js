// The request set: every case is sent, unchanged, to dynalite and to readingsd.
//
// A case is {name, op, input, kind}. op is a DynamoDB operation (Query, GetItem, Scan,
// BatchGetItem) or a DocumentClient paginator (DocQuery, DocScan). kind says how answers compare:
//   'one'      one request; the whole answer (or error name, message and HTTP status) must match
//   'pages'    follow LastEvaluatedKey to the end; every page must match, in order
//   'set'      follow LastEvaluatedKey to the end; the union of items (sorted by key) and the
//              summed Count / ScannedCount must match: for Scan, whose order is the
//              implementation's (DynamoDB and dynalite: by key hash), not part of the contract
//   'mb'       as 'set', and the number of pages too: for pages that end at 1 MB of data read, where
//              the byte each implementation counts differs (its own storage format), so the item a
//              page ends on may too, but not how many pages a partition takes
//   'segments' a parallel scan: each of TotalSegments segments paged to the end; the union of
//              all segments must match, and no item may be in two segments
//   'batch'    BatchGetItem: Responses compared as a set (DynamoDB promises no order)
//   'describe' DescribeTable: what does not depend on when and where the table was made (name,
//              key schema, status, billing mode, which members are there, the ARN's region)
'use strict';

const TABLE = 'readings';

function S(value) { return { S: value }; }
function N(value) { return { N: value }; }

function buildCases(readings) {
  const byDevice = new Map();
  for (const r of readings) {
    if (!byDevice.has(r.device)) byDevice.set(r.device, []);
    byDevice.get(r.device).push(r);
  }
  for (const list of byDevice.values()) list.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
  const a1 = byDevice.get('a1');
  const ts = (i) => a1[i].ts;
  const key = (r) => ({ deviceId: S(r.device), readingTs: S(r.ts) });
  const cases = [];
  const add = (name, op, input, kind = 'one') => cases.push({ name, op, input: { TableName: TABLE, ...input }, kind });
  const query = (name, input, kind) => add(name, 'Query', input, kind);
  const get = (name, input) => add(`get ${name}`, 'GetItem', input);
  const kc = (expression, values, extra = {}) => ({
    KeyConditionExpression: expression,
    ExpressionAttributeValues: values,
    ...extra,
  });

  // --- Query: key conditions of every kind --------------------------------------------------
  for (const device of byDevice.keys()) {
    const kind = device === 'pad.big' ? 'mb' : 'pages';
    query(`query whole partition ${device}`, kc('deviceId = :d', { ':d': S(device) }), kind);
    query(`query whole partition ${device} newest first`,
      kc('deviceId = :d', { ':d': S(device) }, { ScanIndexForward: false }), kind);
  }
  query('query partition that holds nothing', kc('deviceId = :d', { ':d': S('nobody') }));
  const ops = { '=': 'eq', '<': 'lt', '<=': 'le', '>': 'gt', '>=': 'ge' };
  for (const [op, word] of Object.entries(ops)) {
    for (const [where, t] of [['on an item', ts(100)], ['between items', `${ts(100).slice(0, 20)}5Z`]]) {
      query(`query readingTs ${word} ${where}`, kc(`deviceId = :d AND readingTs ${op} :t`, { ':d': S('a1'), ':t': S(t) }));
      query(`query readingTs ${word} ${where} newest first`,
        kc(`deviceId = :d AND readingTs ${op} :t`, { ':d': S('a1'), ':t': S(t) }, { ScanIndexForward: false }));
    }
  }
  query('query between on items', kc('deviceId = :d AND readingTs BETWEEN :a AND :b',
    { ':d': S('a1'), ':a': S(ts(100)), ':b': S(ts(199)) }));
  query('query between newest first', kc('deviceId = :d AND readingTs BETWEEN :a AND :b',
    { ':d': S('a1'), ':a': S(ts(100)), ':b': S(ts(199)) }, { ScanIndexForward: false }));
  query('query between equal bounds', kc('deviceId = :d AND readingTs BETWEEN :a AND :a',
    { ':d': S('a1'), ':a': S(ts(5)) }));
  query('query between reversed bounds', kc('deviceId = :d AND readingTs BETWEEN :a AND :b',
    { ':d': S('a1'), ':a': S(ts(199)), ':b': S(ts(100)) }));
  for (const prefix of ['2026-06-23T0', '2026-06-23T05:1', ts(7), '2026', '2026-06-24']) {
    query(`query begins_with ${prefix}`, kc('deviceId = :d AND begins_with(readingTs, :p)', { ':d': S('a1'), ':p': S(prefix) }));
  }
  query('query begins_with newest first', kc('deviceId = :d AND begins_with(readingTs, :p)',
    { ':d': S('a10'), ':p': S('2026-06-23T03') }, { ScanIndexForward: false }));
  query('query key condition value first', kc(':t > readingTs AND :d = deviceId', { ':d': S('a1'), ':t': S(ts(30)) }));
  query('query key condition in parentheses', kc('(deviceId = :d) AND (readingTs >= :t)', { ':d': S('z'), ':t': S(byDevice.get('z')[90].ts) }));
  query('query key condition through names', kc('#k = :d AND #r < :t', { ':d': S('a1'), ':t': S(ts(3)) },
    { ExpressionAttributeNames: { '#k': 'deviceId', '#r': 'readingTs' } }));

  // --- Query: Limit, paging, ExclusiveStartKey ---------------------------------------------------
  query('query limit 7 paged', kc('deviceId = :d', { ':d': S('z') }, { Limit: 7 }), 'pages');
  query('query limit 7 paged newest first', kc('deviceId = :d', { ':d': S('z') }, { Limit: 7, ScanIndexForward: false }), 'pages');
  query('query limit 64 paged between', kc('deviceId = :d AND readingTs BETWEEN :a AND :b',
    { ':d': S('a1'), ':a': S(ts(100)), ':b': S(ts(399)) }, { Limit: 64 }), 'pages');
  query('query limit stops on the last item', kc('deviceId = :d AND readingTs BETWEEN :a AND :b',
    { ':d': S('a1'), ':a': S(ts(100)), ':b': S(ts(199)) }, { Limit: 100 }));
  query('query limit stops on the last item, paged', kc('deviceId = :d AND readingTs BETWEEN :a AND :b',
    { ':d': S('a1'), ':a': S(ts(100)), ':b': S(ts(199)) }, { Limit: 50 }), 'pages');
  query('query limit above the count', kc('deviceId = :d AND readingTs BETWEEN :a AND :b',
    { ':d': S('a1'), ':a': S(ts(100)), ':b': S(ts(199)) }, { Limit: 1000 }));
  query('query exclusive start key on an item', kc('deviceId = :d', { ':d': S('a1') },
    { Limit: 10, ExclusiveStartKey: key(a1[500]) }));
  query('query exclusive start key on an item newest first', kc('deviceId = :d', { ':d': S('a1') },
    { Limit: 10, ExclusiveStartKey: key(a1[500]), ScanIndexForward: false }));
  query('query exclusive start key between items', kc('deviceId = :d', { ':d': S('a1') },
    { Limit: 10, ExclusiveStartKey: { deviceId: S('a1'), readingTs: S(`${ts(500).slice(0, 20)}5Z`) } }));
  query('query exclusive start key outside the key condition', kc('deviceId = :d AND readingTs > :t',
    { ':d': S('a1'), ':t': S(ts(600)) }, { ExclusiveStartKey: key(a1[10]) }));
  query('query exclusive start key of another partition', kc('deviceId = :d', { ':d': S('a1') },
    { ExclusiveStartKey: key(byDevice.get('z')[3]) }));
  query('query exclusive start key missing the sort key', kc('deviceId = :d', { ':d': S('a1') },
    { ExclusiveStartKey: { deviceId: S('a1') } }));
  query('query exclusive start key with another attribute', kc('deviceId = :d', { ':d': S('a1') },
    { ExclusiveStartKey: { ...key(a1[3]), temperature: N('1') } }));

  // --- Query: the 1 MB page ----------------------------------------------------------------------
  const big = { ':d': S('pad.big') };
  query('query 1 MB pages with COUNT', kc('deviceId = :d', big, { Select: 'COUNT' }), 'mb');
  query('query 1 MB pages with a projection', kc('deviceId = :d', big, { ProjectionExpression: 'label' }), 'mb');
  query('query 1 MB pages of a filter that matches nothing', kc('deviceId = :d', { ...big, ':n': N('1000') },
    { FilterExpression: 'temperature > :n' }), 'mb');
  query('query 1 MB pages with consumed capacity', kc('deviceId = :d', big, { ReturnConsumedCapacity: 'TOTAL', Select: 'COUNT' }), 'mb');
  query('query 1 MB pages with limit 300', kc('deviceId = :d', big, { Limit: 300, ProjectionExpression: 'label' }), 'mb');
  get('a 6 KB reading with consumed capacity', { Key: key(byDevice.get('pad.big')[4]), ReturnConsumedCapacity: 'TOTAL', ProjectionExpression: 'label' });

  // --- Query: FilterExpression -------------------------------------------------------------------
  const filter = (name, expression, values = {}, names = undefined, extra = {}) => query(`query filter ${name}`,
    kc('deviceId = :d', { ':d': S('a1'), ...values }, {
      FilterExpression: expression,
      ...(names ? { ExpressionAttributeNames: names } : {}),
      ...extra,
    }), 'pages');
  filter('temperature > number', 'temperature > :n', { ':n': N('20.5') });
  filter('temperature <= negative', 'temperature <= :n', { ':n': N('-10') });
  filter('energy above a 20-digit number', 'energy > :n', { ':n': N('10000000500000000000') });
  filter('energy equal to a 20-digit number', 'energy = :n', { ':n': N(a1[77].attrs.energy.n) });
  filter('odd numbers exact', 'odd = :a OR odd = :b OR odd <= :c OR (odd < :z AND odd > :y)',
    { ':a': N('0.1234567890123456789'), ':b': N('12345678901234567890123456789012345678'), ':c': N('-98765432109876543210'), ':z': N('0'), ':y': N('-0.001') });
  filter('humidity between', 'humidity BETWEEN :a AND :b', { ':a': N('10'), ':b': N('20') });
  filter('status through a name', '#s = :s', { ':s': S('warn') }, { '#s': 'status' });
  filter('status unicode', '#s = :s', { ':s': S('Zürich ✓') }, { '#s': 'status' });
  filter('door true', 'door = :b', { ':b': { BOOL: true } });
  filter('door <> true', 'door <> :b', { ':b': { BOOL: true } });
  filter('label string compare', 'label < :l', { ':l': S('0010') });
  filter('number against a string', 'temperature = :s', { ':s': S('20.4') });
  filter('begins_with note', 'begins_with(note, :p)', { ':p': S('batt') });
  filter('attribute_exists note', 'attribute_exists(note)');
  filter('attribute_not_exists humidity', 'attribute_not_exists(humidity)');
  filter('dotted name through a name', 'attribute_exists(#ab)', {}, { '#ab': 'a.b' });
  filter('not, and, or, parentheses', 'NOT (door = :b) AND (temperature > :n OR attribute_exists(note))',
    { ':b': { BOOL: true }, ':n': N('30') });
  filter('IN', '#s IN (:a, :b)', { ':a': S('warn'), ':b': S('fail') }, { '#s': 'status' });
  filter('size of a string', 'size(note) > :n', { ':n': N('12') });
  filter('contains', 'contains(note, :w)', { ':w': S('due') });
  filter('attribute_type', 'attribute_type(humidity, :t)', { ':t': S('N') });
  filter('attribute_type of a string', 'attribute_type(label, :t)', { ':t': S('S') });
  filter('with limit 20', 'temperature > :n', { ':n': N('30') }, undefined, { Limit: 20 });
  filter('newest first with limit 33', 'door = :b', { ':b': { BOOL: false } }, undefined, { Limit: 33, ScanIndexForward: false });
  filter('that matches nothing', 'temperature > :n', { ':n': N('1000') });
  filter('with COUNT', 'door = :b', { ':b': { BOOL: true } }, undefined, { Select: 'COUNT' });
  query('query filter on the sort key', kc('deviceId = :d', { ':d': S('a1') }, { FilterExpression: 'readingTs > :t', ExpressionAttributeValues: { ':d': S('a1'), ':t': S(ts(3)) } }));
  query('query filter on the partition key', kc('deviceId = :d', { ':d': S('a1') }, { FilterExpression: 'deviceId = :d' }));
  query('query filter with a reserved word', kc('deviceId = :d', { ':d': S('a1'), ':s': S('ok') }, { FilterExpression: 'status = :s' }));
  query('query filter syntax error', kc('deviceId = :d', { ':d': S('a1'), ':n': N('1') }, { FilterExpression: 'temperature >> :n' }));
  query('query filter with an undefined value', kc('deviceId = :d', { ':d': S('a1') }, { FilterExpression: 'temperature > :n' }));
  query('query filter with an unused value', kc('deviceId = :d', { ':d': S('a1'), ':n': N('1'), ':x': N('2') }, { FilterExpression: 'temperature > :n' }));
  query('query filter with an unused name', kc('deviceId = :d', { ':d': S('a1'), ':n': N('1') },
    { FilterExpression: 'temperature > :n', ExpressionAttributeNames: { '#u': 'unused' } }));

  // --- Query: projections and Select -------------------------------------------------------------
  const projection = (name, expression, names, extra = {}) => query(`query projection ${name}`,
    kc('deviceId = :d AND readingTs BETWEEN :a AND :b', { ':d': S('a1'), ':a': S(ts(0)), ':b': S(ts(40)) }, {
      ProjectionExpression: expression,
      ...(names ? { ExpressionAttributeNames: names } : {}),
      ...extra,
    }));
  projection('two attributes', 'temperature, humidity');
  projection('keys and energy', 'deviceId, readingTs, energy');
  projection('a reserved word through a name', '#s, door', { '#s': 'status' });
  projection('an attribute that is nowhere', 'nosuch');
  projection('a nested path', 'temperature.x');
  projection('a list element', 'temperature[0]');
  projection('a dotted name through a name', '#ab, label', { '#ab': 'a.b' });
  projection('a dotted name as a path', 'a.b, label');
  projection('the same attribute twice', 'temperature, temperature');
  projection('with a filter on an unprojected attribute', 'label', undefined,
    { FilterExpression: 'temperature > :n', ExpressionAttributeValues: { ':d': S('a1'), ':a': S(ts(0)), ':b': S(ts(40)), ':n': N('10') } });
  projection('with Select SPECIFIC_ATTRIBUTES', 'label', undefined, { Select: 'SPECIFIC_ATTRIBUTES' });
  projection('with Select ALL_ATTRIBUTES', 'label', undefined, { Select: 'ALL_ATTRIBUTES' });
  projection('with Select COUNT', 'label', undefined, { Select: 'COUNT' });
  const between40 = kc('deviceId = :d AND readingTs BETWEEN :a AND :b', { ':d': S('a1'), ':a': S(ts(0)), ':b': S(ts(40)) });
  query('query select COUNT', { ...between40, Select: 'COUNT' });
  query('query select ALL_ATTRIBUTES', { ...between40, Select: 'ALL_ATTRIBUTES' });
  query('query select SPECIFIC_ATTRIBUTES without a projection', { ...between40, Select: 'SPECIFIC_ATTRIBUTES' });
  query('query select ALL_PROJECTED_ATTRIBUTES without an index', { ...between40, Select: 'ALL_PROJECTED_ATTRIBUTES' });
  query('query select unknown', { ...between40, Select: 'SOME' });

  // --- Query: ReturnConsumedCapacity -------------------------------------------------------------
  for (const mode of ['TOTAL', 'INDEXES', 'NONE']) {
    query(`query consumed capacity ${mode}`, { ...between40, ReturnConsumedCapacity: mode });
  }
  query('query consumed capacity TOTAL consistent', { ...between40, ReturnConsumedCapacity: 'TOTAL', ConsistentRead: true });
  query('query consumed capacity TOTAL whole partition paged',
    kc('deviceId = :d', { ':d': S('a10') }, { ReturnConsumedCapacity: 'TOTAL', Limit: 150 }), 'pages');
  query('query consumed capacity TOTAL with a filter', kc('deviceId = :d', { ':d': S('sensor-07') },
    { ReturnConsumedCapacity: 'TOTAL', FilterExpression: 'door = :b', ExpressionAttributeValues: { ':d': S('sensor-07'), ':b': { BOOL: true } } }));
  query('query consumed capacity TOTAL with COUNT', kc('deviceId = :d', { ':d': S('X_9') }, { ReturnConsumedCapacity: 'TOTAL', Select: 'COUNT' }));
  query('query consumed capacity TOTAL on nothing', kc('deviceId = :d', { ':d': S('nobody') }, { ReturnConsumedCapacity: 'TOTAL' }));
  query('query consumed capacity unknown mode', { ...between40, ReturnConsumedCapacity: 'ALL' });

  // --- Query: legacy parameters ------------------------------------------------------------------
  query('query legacy KeyConditions EQ BETWEEN', {
    KeyConditions: {
      deviceId: { ComparisonOperator: 'EQ', AttributeValueList: [S('a1')] },
      readingTs: { ComparisonOperator: 'BETWEEN', AttributeValueList: [S(ts(10)), S(ts(20))] },
    },
  });
  query('query legacy KeyConditions BEGINS_WITH', {
    KeyConditions: {
      deviceId: { ComparisonOperator: 'EQ', AttributeValueList: [S('a10')] },
      readingTs: { ComparisonOperator: 'BEGINS_WITH', AttributeValueList: [S('2026-06-23T01')] },
    },
  });
  query('query legacy QueryFilter and AttributesToGet', {
    KeyConditions: { deviceId: { ComparisonOperator: 'EQ', AttributeValueList: [S('z')] } },
    QueryFilter: { temperature: { ComparisonOperator: 'GT', AttributeValueList: [N('25')] } },
    AttributesToGet: ['temperature', 'readingTs'],
  });
  query('query legacy QueryFilter ConditionalOperator OR', {
    KeyConditions: { deviceId: { ComparisonOperator: 'EQ', AttributeValueList: [S('z')] } },
    QueryFilter: {
      temperature: { ComparisonOperator: 'GT', AttributeValueList: [N('40')] },
      note: { ComparisonOperator: 'NOT_NULL' },
    },
    ConditionalOperator: 'OR',
  });
  // The same filter as an expression: the legacy form must select what this selects.
  query('query filter the legacy OR as an expression', {
    KeyConditionExpression: 'deviceId = :d',
    FilterExpression: 'temperature > :t OR attribute_exists(note)',
    ExpressionAttributeValues: { ':d': S('z'), ':t': N('40') },
  });
  query('query legacy KeyConditions beside KeyConditionExpression', {
    ...kc('deviceId = :d', { ':d': S('a1') }),
    KeyConditions: { deviceId: { ComparisonOperator: 'EQ', AttributeValueList: [S('a1')] } },
  });

  // --- Query: bad requests -----------------------------------------------------------------------
  add('query a table that does not exist', 'Query', { ...kc('deviceId = :d', { ':d': S('a1') }), TableName: 'nosuch' });
  query('query without a key condition', {});
  query('query on a non-key attribute', kc('temperature = :t', { ':t': N('1') }));
  query('query without the partition key', kc('readingTs > :t', { ':t': S(ts(1)) }));
  query('query partition key not by equality', kc('deviceId > :d', { ':d': S('a1') }));
  query('query begins_with on the partition key', kc('begins_with(deviceId, :d)', { ':d': S('a') }));
  query('query two conditions on the sort key', kc('deviceId = :d AND readingTs > :a AND readingTs < :b',
    { ':d': S('a1'), ':a': S(ts(1)), ':b': S(ts(9)) }));
  query('query OR in the key condition', kc('deviceId = :d OR readingTs > :t', { ':d': S('a1'), ':t': S(ts(1)) }));
  query('query key condition syntax error', kc('deviceId = = :d', { ':d': S('a1') }));
  query('query key condition with an unused value', kc('deviceId = :d', { ':d': S('a1'), ':x': S('b') }));
  query('query partition key as a number', kc('deviceId = :d', { ':d': N('1') }));
  query('query sort key as a number', kc('deviceId = :d AND readingTs > :t', { ':d': S('a1'), ':t': N('1') }));
  query('query empty partition key', kc('deviceId = :d', { ':d': S('') }));
  query('query limit 0', kc('deviceId = :d', { ':d': S('a1') }, { Limit: 0 }));
  query('query limit -1', kc('deviceId = :d', { ':d': S('a1') }, { Limit: -1 }));
  query('query device id outside the charset', kc('deviceId = :d', { ':d': S('a/b') }));
  query('query device id of 200 characters', kc('deviceId = :d', { ':d': S('d'.repeat(200)) }));
  query('query sort key prefix no timestamp has', kc('deviceId = :d AND begins_with(readingTs, :p)', { ':d': S('a1'), ':p': S('x') }));
  query('query sort key bound that is no timestamp', kc('deviceId = :d AND readingTs > :t', { ':d': S('a1'), ':t': S('abc') }));

  // Bounds readingsd normalises and dynalite compares as raw strings (expected differences).
  query('query bound in seconds without a fraction', kc('deviceId = :d AND readingTs >= :t', { ':d': S('a1'), ':t': S('2026-06-23T00:00:00Z') }));
  query('query bound with a zone offset', kc('deviceId = :d AND readingTs <= :t', { ':d': S('a1'), ':t': S('2026-06-23T02:00:00+02:00') }));

  // --- GetItem -----------------------------------------------------------------------------------
  for (const i of [0, 1, 2, 3, 4, 77, 899]) get(`a1 #${i}`, { Key: key(a1[i]) });
  for (const device of ['a10', 'gw.02:port-3', 'X_9']) get(`${device} #5`, { Key: key(byDevice.get(device)[5]) });
  get('a missing reading', { Key: { deviceId: S('a1'), readingTs: S(`${ts(5).slice(0, 20)}5Z`) } });
  get('a missing device', { Key: { deviceId: S('nobody'), readingTs: S(ts(5)) } });
  get('with a projection', { Key: key(a1[4]), ProjectionExpression: 'energy, odd, #s', ExpressionAttributeNames: { '#s': 'status' } });
  get('with a nested projection', { Key: key(a1[4]), ProjectionExpression: 'energy.x, label' });
  get('with a projection of nothing there', { Key: key(a1[4]), ProjectionExpression: 'nosuch' });
  get('with legacy AttributesToGet', { Key: key(a1[4]), AttributesToGet: ['energy', 'door'] });
  get('consistent', { Key: key(a1[4]), ConsistentRead: true });
  get('consumed capacity TOTAL', { Key: key(a1[4]), ReturnConsumedCapacity: 'TOTAL' });
  get('consumed capacity TOTAL consistent', { Key: key(a1[4]), ReturnConsumedCapacity: 'TOTAL', ConsistentRead: true });
  get('consumed capacity INDEXES', { Key: key(a1[4]), ReturnConsumedCapacity: 'INDEXES' });
  get('consumed capacity TOTAL of a missing reading', { Key: { deviceId: S('nobody'), readingTs: S(ts(5)) }, ReturnConsumedCapacity: 'TOTAL' });
  get('without the sort key', { Key: { deviceId: S('a1') } });
  get('with another attribute', { Key: { ...key(a1[4]), temperature: N('1') } });
  get('sort key as a number', { Key: { deviceId: S('a1'), readingTs: N('1') } });
  get('empty sort key', { Key: { deviceId: S('a1'), readingTs: S('') } });
  get('device id outside the charset', { Key: { deviceId: S('a/b'), readingTs: S(ts(4)) } });
  get('sort key that is no timestamp', { Key: { deviceId: S('a1'), readingTs: S('abc') } });
  get('sort key not normalised', { Key: { deviceId: S('a1'), readingTs: S('2026-06-23T00:00:00Z') } });
  get('projection with an unused name', { Key: key(a1[4]), ProjectionExpression: 'energy', ExpressionAttributeNames: { '#u': 'x' } });
  add('get from a table that does not exist', 'GetItem', { Key: key(a1[4]), TableName: 'nosuch' });

  // --- Scan --------------------------------------------------------------------------------------
  const scan = (name, input, kind) => add(`scan ${name}`, 'Scan', input, kind);
  scan('whole table', {}, 'set');
  scan('whole table limit 500', { Limit: 500 }, 'set');
  scan('first page limit 10', { Limit: 10 });
  scan('filter', { FilterExpression: 'temperature > :n AND door = :b', ExpressionAttributeValues: { ':n': N('25'), ':b': { BOOL: true } } }, 'set');
  scan('filter with limit 300', { FilterExpression: 'attribute_exists(note)', Limit: 300 }, 'set');
  scan('projection', { ProjectionExpression: 'deviceId, readingTs, energy' }, 'set');
  scan('select COUNT', { Select: 'COUNT' }, 'set');
  scan('consumed capacity TOTAL', { ReturnConsumedCapacity: 'TOTAL', Select: 'COUNT' }, 'set');
  scan('4 segments', { TotalSegments: 4 }, 'segments');
  scan('4 segments limit 200', { TotalSegments: 4, Limit: 200 }, 'segments');
  scan('segment without total segments', { Segment: 0 });
  scan('segment beyond total segments', { Segment: 4, TotalSegments: 4 });
  scan('total segments 0', { Segment: 0, TotalSegments: 0 });
  scan('limit 0', { Limit: 0 });
  scan('filter on a key attribute', { FilterExpression: 'deviceId = :d', ExpressionAttributeValues: { ':d': S('z') } }, 'set');
  add('scan a table that does not exist', 'Scan', { TableName: 'nosuch' });

  // --- BatchGetItem ------------------------------------------------------------------------------
  const batch = (name, request, extra = {}) => cases.push({
    name: `batch get ${name}`, op: 'BatchGetItem', kind: 'batch', input: { RequestItems: { [TABLE]: request }, ...extra },
  });
  const keys35 = [...a1.slice(0, 20), ...byDevice.get('z').slice(50, 60)].map(key);
  keys35.push(...[1, 2, 3, 4, 5].map((i) => ({ deviceId: S('a1'), readingTs: S(`${ts(i).slice(0, 20)}5Z`) })));
  batch('30 present 5 missing', { Keys: keys35 });
  batch('with a projection', { Keys: keys35.slice(0, 10), ProjectionExpression: 'energy, #s', ExpressionAttributeNames: { '#s': 'status' } });
  batch('consistent with consumed capacity', { Keys: keys35, ConsistentRead: true }, { ReturnConsumedCapacity: 'TOTAL' });
  batch('consumed capacity TOTAL', { Keys: keys35 }, { ReturnConsumedCapacity: 'TOTAL' });
  batch('100 keys', { Keys: a1.slice(200, 300).map(key) });
  batch('101 keys', { Keys: a1.slice(200, 301).map(key) });
  batch('duplicate keys', { Keys: [key(a1[1]), key(a1[1])] });
  batch('no keys', { Keys: [] });
  batch('a key without the sort key', { Keys: [{ deviceId: S('a1') }] });
  cases.push({ name: 'batch get a table that does not exist', op: 'BatchGetItem', kind: 'batch', input: { RequestItems: { nosuch: { Keys: [key(a1[1])] } } } });

  // --- DescribeTable, ListTables -----------------------------------------------------------------
  cases.push({ name: 'describe table', op: 'DescribeTable', kind: 'describe', input: { TableName: TABLE } });
  cases.push({ name: 'describe a table that does not exist', op: 'DescribeTable', kind: 'one', input: { TableName: 'nosuch' } });
  cases.push({ name: 'list tables', op: 'ListTables', kind: 'one', input: {} });

  // --- DocumentClient (default settings) paging ------------------------------------------------
  cases.push({ name: 'document client paginateQuery a1', op: 'DocQuery', kind: 'one',
    input: { TableName: TABLE, KeyConditionExpression: 'deviceId = :d', ExpressionAttributeValues: { ':d': 'a1' } } });
  cases.push({ name: 'document client paginateQuery a10 pages of 100 newest first', op: 'DocQuery', kind: 'one',
    input: { TableName: TABLE, KeyConditionExpression: 'deviceId = :d', ExpressionAttributeValues: { ':d': 'a10' }, Limit: 100, ScanIndexForward: false } });
  cases.push({ name: 'document client paginateScan', op: 'DocScan', kind: 'one', input: { TableName: TABLE } });

  const names = new Set();
  for (const c of cases) {
    if (names.has(c.name)) throw new Error(`duplicate case name: ${c.name}`);
    names.add(c.name);
  }
  return cases;
}

module.exports = { TABLE, buildCases };
