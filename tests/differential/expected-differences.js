// Every difference between readingsd and dynalite that differential.js may find, by case name
// (cases.js), with the reason. A difference not listed here fails the test, and so does an entry
// whose case no longer differs: the list stays the truth. README (DynamoDB-compatible API) says
// the same in prose.
//
// Three kinds of entry, by the first word of the reason:
//   design:   readingsd is right and means to stay so (it normalises timestamps in keys).
//   dynalite: readingsd answers as DynamoDB does and dynalite does not.
//   gap:      readingsd is not yet what DynamoDB is; issue #22 names the work. Remove the entry
//             with the change that closes it (the test then insists).
'use strict';

const NORMALISED = 'design: readingsd normalises a timestamp in a key (any accepted form, any zone) to ' +
  'its 30-byte UTC sort key before comparing, so every form of one instant finds the same reading; ' +
  'dynalite compares the raw strings';
const SYNTAX = 'dynalite: readingsd words a syntax error as DynamoDB does (Syntax error; token: "…", ' +
  'near: "…"); dynalite reports its own parser\'s expectation';
const SCAN = 'gap: Scan is not served yet (UnknownOperationException) (#22)';
const BATCH = 'gap: BatchGetItem is not served yet (UnknownOperationException) (#22)';
const CAPACITY = 'gap: ReturnConsumedCapacity is accepted and ignored: no ConsumedCapacity yet (#22)';
const LEGACY = 'gap: the legacy parameters KeyConditions, QueryFilter, AttributesToGet, ConditionalOperator ' +
  'are refused (#22)';
const LIMIT = 'gap: a page that Limit stops exactly on the last match has no LastEvaluatedKey; DynamoDB ' +
  'returns one whenever Limit stopped the page (#22)';
const IMPOSSIBLE = 'gap: a key value no reading can have (device id outside [A-Za-z0-9._:-] or over 128 bytes, ' +
  'a sort key or prefix no timestamp can have) is a ValidationException on the DynamoDB API; DynamoDB ' +
  'finds nothing (#22)';
const WORDING = 'gap: the error is DynamoDB\'s, its message is not (#22: "in DynamoDB\'s words")';

module.exports = {
  'query bound in seconds without a fraction': NORMALISED,
  'query bound with a zone offset': NORMALISED,
  'get sort key not normalised': NORMALISED,

  'query filter syntax error': SYNTAX,
  'query key condition syntax error': SYNTAX,
  'query projection with Select COUNT': 'dynalite: "If you use the ProjectionExpression parameter, then the ' +
    'value for Select can only be SPECIFIC_ATTRIBUTES" (DynamoDB\'s reference); readingsd refuses COUNT beside it, ' +
    'dynalite ignores the projection',
  'query select SPECIFIC_ATTRIBUTES without a projection': 'dynalite: SPECIFIC_ATTRIBUTES returns "only the ' +
    'attributes listed in ProjectionExpression" (DynamoDB\'s reference); without one readingsd refuses the ' +
    'request, dynalite returns whole items',
  'query select ALL_PROJECTED_ATTRIBUTES without an index': 'dynalite: ALL_PROJECTED_ATTRIBUTES is for a ' +
    'query of an index (DynamoDB refuses it otherwise), so readingsd, which has no indexes, refuses it; dynalite ' +
    'returns whole items',

  'scan whole table': SCAN,
  'scan whole table limit 500': SCAN,
  // Once Scan is served this one still differs, by design: a page is the first items in the
  // implementation's own order (DynamoDB and dynalite: by a hash of the partition key).
  'scan first page limit 10': SCAN,
  'scan filter': SCAN,
  'scan filter with limit 300': SCAN,
  'scan projection': SCAN,
  'scan select COUNT': SCAN,
  'scan consumed capacity TOTAL': SCAN,
  'scan 4 segments': SCAN,
  'scan 4 segments limit 200': SCAN,
  // Once Scan is served this one still differs, for dynalite: it scans the whole table where
  // DynamoDB refuses a Segment without TotalSegments.
  'scan segment without total segments': SCAN,
  'scan segment beyond total segments': SCAN,
  'scan total segments 0': SCAN,
  'scan limit 0': SCAN,
  'scan filter on a key attribute': SCAN,
  'scan a table that does not exist': SCAN,
  'document client paginateScan': SCAN,

  'batch get 30 present 5 missing': BATCH,
  'batch get with a projection': BATCH,
  'batch get consistent with consumed capacity': BATCH,
  'batch get consumed capacity TOTAL': BATCH,
  'batch get 100 keys': BATCH,
  'batch get 101 keys': BATCH,
  'batch get duplicate keys': BATCH,
  'batch get no keys': BATCH,
  'batch get a key without the sort key': BATCH,
  'batch get a table that does not exist': BATCH,

  'query consumed capacity TOTAL': CAPACITY,
  'query consumed capacity INDEXES': CAPACITY,
  'query consumed capacity TOTAL consistent': CAPACITY,
  'query consumed capacity TOTAL whole partition paged': CAPACITY,
  'query consumed capacity TOTAL with a filter': CAPACITY,
  'query consumed capacity TOTAL with COUNT': CAPACITY,
  'query consumed capacity TOTAL on nothing': CAPACITY,
  'query consumed capacity unknown mode': `${CAPACITY}; so an unknown mode is not refused either`,
  'get consumed capacity TOTAL': CAPACITY,
  'get consumed capacity TOTAL consistent': CAPACITY,
  'get consumed capacity INDEXES': CAPACITY,
  'get consumed capacity TOTAL of a missing reading': CAPACITY,
  'get a 6 KB reading with consumed capacity': CAPACITY,
  'query 1 MB pages with consumed capacity': CAPACITY,

  'query legacy KeyConditions EQ BETWEEN': LEGACY,
  'query legacy KeyConditions BEGINS_WITH': LEGACY,
  'query legacy QueryFilter and AttributesToGet': LEGACY,
  'query legacy QueryFilter ConditionalOperator OR': LEGACY,
  'query legacy KeyConditions beside KeyConditionExpression': `${LEGACY}; DynamoDB refuses mixing them with ` +
    '"Can not use both expression and non-expression parameters in the same request"',
  'get with legacy AttributesToGet': LEGACY,

  'query limit stops on the last item': LIMIT,
  'query limit stops on the last item, paged': LIMIT,
  'query filter with limit 20': LIMIT,
  'document client paginateQuery a10 pages of 100 newest first': `${LIMIT}: DynamoDB ends 700 readings in ` +
    'pages of 100 with an empty eighth page',

  'query exclusive start key outside the key condition': 'gap: an ExclusiveStartKey outside the key ' +
    'condition\'s range is ignored (the whole range is answered); DynamoDB refuses it (#22)',

  'query empty partition key': `${IMPOSSIBLE}; for an empty string dynalite answers an empty page`,
  'query device id outside the charset': IMPOSSIBLE,
  'query device id of 200 characters': IMPOSSIBLE,
  'query sort key prefix no timestamp has': IMPOSSIBLE,
  'query sort key bound that is no timestamp': IMPOSSIBLE,
  'get device id outside the charset': IMPOSSIBLE,
  'get sort key that is no timestamp': IMPOSSIBLE,
  'get empty sort key': `${IMPOSSIBLE}; for an empty string DynamoDB's own message ("The AttributeValue for a ` +
    'key attribute cannot contain an empty string value")',

  'describe table': 'gap: the TableArn names region "local"; the region is to come from the config (#22)',

  'query on a non-key attribute': `${WORDING}: "Query condition missed key schema element: deviceId"`,
  'query two conditions on the sort key': `${WORDING}: no "Invalid KeyConditionExpression: " before it`,
  'query OR in the key condition': `${WORDING}: no "Invalid KeyConditionExpression: " before it`,
  'query exclusive start key missing the sort key': `${WORDING}: "The provided starting key is invalid"`,
  'query exclusive start key with another attribute': `${WORDING}: "The provided starting key is invalid"`,
  'query select unknown': `${WORDING}: the enum constraint message of every DynamoDB parameter`,
  'get without the sort key': `${WORDING}: no "Key: " before it`,
  'get with another attribute': `${WORDING}: no "Key: " before it`,
  'get sort key as a number': `${WORDING}: no "Key: " before it`,
};
