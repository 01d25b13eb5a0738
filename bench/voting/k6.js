// The seed's voting flow for bench/voting.sh, as k6 writes it: a CSV row
// per iteration (SharedArray), GET the parties, the first party's id from
// the JSON, POST a vote with the row's headers and a JSON body, each
// answer checked. TARGET, USERS, SECS and VOTERS (an uncompressed CSV)
// come from the environment.
import http from 'k6/http';
import { check } from 'k6';
import { SharedArray } from 'k6/data';

const voters = new SharedArray('voters', () =>
  open(__ENV.VOTERS).trim().split('\n').slice(1).map((l) => l.split(',')));

export const options = {
  scenarios: {
    voter: { executor: 'constant-vus', vus: parseInt(__ENV.USERS || '64'), duration: `${__ENV.SECS || 10}s`, gracefulStop: '2s' },
  },
  summaryTrendStats: ['med', 'p(99)'],
};

const base = __ENV.TARGET;
const accept = { headers: { Accept: 'application/json' } };

export default function () {
  const row = voters[(__VU * 1000003 + __ITER) % voters.length];
  const parties = http.get(`${base}/elections/2026/parties`, accept);
  check(parties, { 'parties 200': (r) => r.status === 200 });
  const party = parties.json('parties.0.id');
  const vote = http.post(`${base}/votes`, JSON.stringify({ partyId: party }), {
    headers: {
      Accept: 'application/json',
      'Content-Type': 'application/json',
      'voter-id': row[0],
      'election-district-id': row[1],
    },
  });
  check(vote, {
    'vote 201': (r) => r.status === 201,
    'vote counted': (r) => r.json('status') === 'counted',
  });
}
