"""The seed's voting flow for bench/voting.sh, as Locust writes it: a CSV
row per iteration, GET the parties, the first party's id from the JSON, POST
a vote with the row's headers and a JSON body, each answer checked.
VOTERS (an uncompressed CSV) comes from the environment; the host, users
and time from locust's own options."""
import csv
import itertools
import os

from locust import FastHttpUser, constant, task

with open(os.environ["VOTERS"], newline="") as f:
    _ROWS = [(r["voter_id"], r["district_id"]) for r in csv.DictReader(f)]
_NEXT = itertools.cycle(_ROWS)


class Voter(FastHttpUser):
    wait_time = constant(0)

    @task
    def vote(self):
        voter, district = next(_NEXT)
        with self.client.get("/elections/2026/parties", headers={"Accept": "application/json"},
                             name="GET parties", catch_response=True) as r:
            if r.status_code != 200:
                r.failure(f"status {r.status_code}")
                return
            party = r.json()["parties"][0]["id"]
        with self.client.post("/votes", json={"partyId": party}, name="POST vote", catch_response=True,
                              headers={"Accept": "application/json", "voter-id": voter,
                                       "election-district-id": district}) as r:
            if r.status_code != 201:
                r.failure(f"status {r.status_code}")
            elif r.json().get("status") != "counted":
                r.failure("not counted")
