#!/usr/bin/env python3
"""Writes tests/data/malformed/: frames that must each become exactly one rejection.

The file name says how the relay must answer: notice_* with NOTICE, ok_* with OK false (the
event id could be read), closed_* with CLOSED (the subscription id could be read). The files are
committed; rerun this script only to change the corpus. They also seed the frame fuzzer.
"""
import json
import os

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "malformed")
os.makedirs(out, exist_ok=True)

ID = "a" * 64
PK = "b" * 64
SIG = "c" * 128


def event(**changes):
    ev = {"id": ID, "pubkey": PK, "created_at": 1700000000, "kind": 1, "tags": [],
          "content": "hi", "sig": SIG}
    for key, value in changes.items():
        if value is DROP:
            del ev[key]
        else:
            ev[key] = value
    return ev


DROP = object()
cases = {
    # framing
    "notice_empty": b"",
    "notice_not_json": b"hello",
    "notice_truncated_array": b'["EVENT",{"id":"',
    "notice_truncated_string": b'["REQ","sub',
    "notice_object_not_array": b'{"type":"EVENT"}',
    "notice_empty_array": b"[]",
    "notice_type_not_string": b"[1,2,3]",
    "notice_unknown_type": b'["HELLO","x"]',
    "notice_lowercase_type": b'["event",{}]',
    "notice_trailing_garbage": b'["CLOSE","x"]]',
    "notice_invalid_utf8": b'["CLOSE","\xff\xfe"]',
    "notice_overlong_utf8": b'["CLOSE","\xc0\xaf"]',
    "notice_lone_surrogate_escape": b'["CLOSE","\\ud800"]',
    "notice_deep_nesting": b"[" * 5000 + b"]" * 5000,
    "notice_nan": b'["REQ","s",{"limit":NaN}]',
    "notice_single_quotes": b"['CLOSE','x']",
    # EVENT without a readable id
    "notice_event_missing_payload": b'["EVENT"]',
    "notice_event_two_payloads": json.dumps(["EVENT", event(), event()]).encode(),
    "notice_event_not_object": b'["EVENT","string"]',
    "notice_event_id_uppercase": json.dumps(["EVENT", event(id="A" * 64)]).encode(),
    "notice_event_id_short": json.dumps(["EVENT", event(id="a" * 63)]).encode(),
    "notice_event_id_number": json.dumps(["EVENT", event(id=12)]).encode(),
    "notice_event_missing_id": json.dumps(["EVENT", event(id=DROP)]).encode(),
    # EVENT with a readable id: OK false
    "ok_missing_sig": json.dumps(["EVENT", event(sig=DROP)]).encode(),
    "ok_unknown_field": json.dumps(["EVENT", dict(event(), extra=1)]).encode(),
    "ok_pubkey_bad_hex": json.dumps(["EVENT", event(pubkey="g" * 64)]).encode(),
    "ok_sig_short": json.dumps(["EVENT", event(sig="c" * 127)]).encode(),
    "ok_created_at_string": json.dumps(["EVENT", event(created_at="1700000000")]).encode(),
    "ok_created_at_negative": json.dumps(["EVENT", event(created_at=-1)]).encode(),
    "ok_created_at_float": b'["EVENT",' + json.dumps(event()).replace('1700000000', '1.7e9').encode() + b"]",
    "ok_created_at_huge": b'["EVENT",' + json.dumps(event()).replace('1700000000', '99999999999999999999999').encode() + b"]",
    "ok_kind_too_big": json.dumps(["EVENT", event(kind=65536)]).encode(),
    "ok_kind_negative": json.dumps(["EVENT", event(kind=-1)]).encode(),
    "ok_kind_float": b'["EVENT",' + json.dumps(event()).replace('"kind": 1', '"kind": 1.0').encode() + b"]",
    "ok_tags_object": json.dumps(["EVENT", event(tags={})]).encode(),
    "ok_tag_not_array": json.dumps(["EVENT", event(tags=["p"])]).encode(),
    "ok_tag_empty": json.dumps(["EVENT", event(tags=[[]])]).encode(),
    "ok_tag_number": json.dumps(["EVENT", event(tags=[["p", 1]])]).encode(),
    "ok_content_null": json.dumps(["EVENT", event(content=None)]).encode(),
    "ok_content_number": json.dumps(["EVENT", event(content=5)]).encode(),
    # REQ / COUNT / CLOSE
    "notice_req_no_sub": b'["REQ"]',
    "notice_req_sub_number": b'["REQ",1,{}]',
    "notice_req_sub_empty": b'["REQ","",{}]',
    "notice_req_sub_too_long": json.dumps(["REQ", "s" * 65, {}]).encode(),
    "closed_req_no_filter": b'["REQ","s"]',
    "closed_req_filter_not_object": b'["REQ","s",[]]',
    "closed_req_ids_not_array": b'["REQ","s",{"ids":"abc"}]',
    "closed_req_ids_bad_hex": b'["REQ","s",{"ids":["xyz"]}]',
    "closed_req_ids_prefix": b'["REQ","s",{"ids":["abcd"]}]',
    "closed_req_authors_upper": json.dumps(["REQ", "s", {"authors": ["A" * 64]}]).encode(),
    "closed_req_kinds_string": b'["REQ","s",{"kinds":["1"]}]',
    "closed_req_kinds_huge": b'["REQ","s",{"kinds":[70000]}]',
    "closed_req_since_negative": b'["REQ","s",{"since":-5}]',
    "closed_req_until_float": b'["REQ","s",{"until":1.5}]',
    "closed_req_limit_string": b'["REQ","s",{"limit":"10"}]',
    "closed_req_limit_huge": b'["REQ","s",{"limit":1e400}]',
    "closed_req_tag_long_name": b'["REQ","s",{"#ee":["x"]}]',
    "closed_req_tag_digit": b'["REQ","s",{"#1":["x"]}]',
    "closed_req_tag_values_number": b'["REQ","s",{"#e":[1]}]',
    "closed_req_unknown_field": b'["REQ","s",{"search":"bees"}]',
    "closed_req_too_many_filters": json.dumps(["REQ", "s"] + [{}] * 21).encode(),
    "closed_req_too_many_values": json.dumps(["REQ", "s", {"kinds": list(range(10001))}]).encode(),
    "closed_count_bad_filter": b'["COUNT","c",{"kinds":{}}]',
    "notice_close_no_sub": b'["CLOSE"]',
    "notice_close_extra": b'["CLOSE","a","b"]',
    "notice_close_sub_object": b'["CLOSE",{}]',
    "notice_auth_not_object": b'["AUTH","challenge"]',
}

for name, data in cases.items():
    with open(os.path.join(out, name + ".json"), "wb") as f:
        f.write(data)
print(f"wrote {len(cases)} frames to {out}")
