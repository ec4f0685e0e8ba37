//! Decoding the probe's reply, with hand-made replies.

use redis::Value;

use super::{decode, decode_look};
use crate::keys::Keys;
use crate::schema::kind;
use crate::snapshot::{Ack, LockKind, StreamId};

fn s(x: &[u8]) -> Value {
    Value::BulkString(x.to_vec())
}
fn arr(items: Vec<Value>) -> Value {
    Value::Array(items)
}
fn empty_set() -> Value {
    arr(vec![s(b"none"), Value::Int(0), arr(vec![])])
}
fn reply(lock: Value, fence: Value) -> Value {
    arr(vec![
        arr(vec![s(b"1700000000"), s(b"250000")]),
        lock,
        fence,
        empty_set(),
        arr(vec![]),
        empty_set(),
        arr(vec![]),
    ])
}

#[test]
fn redisson_hash_is_decoded_with_holder_and_ttl() {
    let lock = arr(vec![s(b"hash"), Value::Int(29_500), Value::Int(1), arr(vec![s(b"8d3c-uuid:57"), s(b"1")])]);
    let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"string"), s(b"42")])), None).unwrap();
    assert_eq!(snap.time_ms, 1_700_000_000_250);
    assert_eq!(snap.lock.kind, LockKind::Redisson);
    assert_eq!(snap.lock.holders, vec!["8d3c-uuid:57"]);
    assert_eq!(snap.lock.ttl_ms, Some(29_500));
    assert_eq!(snap.fence, Some(42));
    // A fence above 0 says a server ran the job, which needs registered
    // users: a missing registry was lost, and no flag can be trusted.
    assert_eq!(snap.problems.len(), 1, "{:?}", snap.problems);
    assert!(snap.problems[0].starts_with("Redis lost the registry {outbound}:users"));
    assert!(matches!(snap.enabled(), crate::snapshot::Enabled::Unknown { .. }));
    assert_eq!(snap.job_absent, None);
    // A counter at 0 (seeded, never taken) or none: nothing was lost.
    for fence in [arr(vec![s(b"string"), s(b"0")]), arr(vec![s(b"none")])] {
        let lock = arr(vec![s(b"none"), Value::Int(-2)]);
        let snap = decode(&Keys::new("outbound"), &reply(lock, fence), None).unwrap();
        assert!(snap.problems.is_empty(), "{:?}", snap.problems);
        assert_eq!(snap.enabled(), crate::snapshot::Enabled::No);
    }
}

#[test]
fn a_redisson_port_without_threads_is_redisson_too() {
    // node-redisson names its holder `<client uuid>:<lock uuid>`.
    let field = b"0b6f7c1e-3b55-4b8e-9d8e-1f0a4a9c2e11:5f0c1d2e-7a8b-4c9d-8e0f-1a2b3c4d5e6f";
    let lock = arr(vec![s(b"hash"), Value::Int(29_500), Value::Int(1), arr(vec![s(field), s(b"1")])]);
    let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"none")])), None).unwrap();
    assert_eq!(snap.lock.kind, LockKind::Redisson);
    let lock = arr(vec![s(b"hash"), Value::Int(29_500), Value::Int(1), arr(vec![s(b"uuid-a:not-a-thread"), s(b"1")])]);
    let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"none")])), None).unwrap();
    assert_eq!(snap.lock.kind, LockKind::Hash);
}

#[test]
fn alternation_hash_shows_next_run() {
    let lock =
        arr(vec![s(b"hash"), Value::Int(-1), Value::Int(1), arr(vec![s(b"invoice-export"), s(b"1700000100000")])]);
    let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"none")])), None).unwrap();
    assert_eq!(snap.lock.kind, LockKind::Alternation);
    assert_eq!(snap.lock.next_run_ms, Some(1_700_000_100_000));
    assert_eq!(snap.lock.ttl_ms, None);
}

#[test]
fn non_utf8_string_token_is_escaped() {
    let lock = arr(vec![s(b"string"), Value::Int(5000), Value::Int(3), s(b"\xffa\x00")]);
    let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"none")])), None).unwrap();
    assert_eq!(snap.lock.kind, LockKind::String);
    assert_eq!(snap.lock.holders, vec!["\\xffa\\u{0}"]);
}

#[test]
fn wrong_types_become_problems_not_errors() {
    let lock = arr(vec![s(b"list"), Value::Int(-1)]);
    let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"hash")])), None).unwrap();
    assert_eq!(snap.lock.kind, LockKind::Unreadable);
    assert_eq!(snap.problems.len(), 2, "{:?}", snap.problems);
}

#[test]
fn the_event_stream_tail_is_found_by_its_tag_wherever_it_is() {
    let tail = arr(vec![
        s(b"events"),
        s(b"stream"),
        arr(vec![
            s(b"1700000000200-0"),
            s(kind::ACQUIRED.as_bytes()),
            s(b"1700000000100-1"),
            s(kind::RELEASED.as_bytes()),
        ]),
    ]);
    for extra in [vec![tail.clone()], vec![arr(vec![s(b"something"), s(b"else")]), tail.clone()]] {
        let mut r = reply(arr(vec![s(b"none"), Value::Int(-2)]), arr(vec![s(b"none")]));
        let Value::Array(items) = &mut r else { unreachable!() };
        items.extend(extra);
        let snap = decode(&Keys::new("outbound"), &r, None).unwrap();
        let events = snap.recent_events.unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].id, StreamId { ms: 1_700_000_000_200, seq: 0 });
        assert_eq!(events[0].kind, kind::ACQUIRED);
        assert_eq!(events[1].kind, kind::RELEASED);
    }
}

#[test]
fn a_missing_stream_is_empty_an_unread_one_is_not_known() {
    let with = |t: &[u8]| {
        let mut r = reply(arr(vec![s(b"none"), Value::Int(-2)]), arr(vec![s(b"none")]));
        let Value::Array(items) = &mut r else { unreachable!() };
        items.push(arr(vec![s(b"events"), s(t), arr(vec![])]));
        decode(&Keys::new("outbound"), &r, None).unwrap()
    };
    assert_eq!(with(b"none").recent_events, Some(vec![]));
    assert_eq!(with(b"unread").recent_events, None);
    let wrong = with(b"hash");
    assert_eq!(wrong.recent_events, None);
    assert_eq!(wrong.problems.len(), 1, "{:?}", wrong.problems);
    let old = decode(&Keys::new("outbound"), &reply(arr(vec![s(b"none")]), arr(vec![s(b"none")])), None).unwrap();
    assert_eq!(old.recent_events, None, "a reply without the tail says nothing about the stream");
}

#[test]
fn an_unreadable_fence_is_told_apart_from_a_missing_one() {
    let lock = || arr(vec![s(b"none"), Value::Int(-2)]);
    let missing = decode(&Keys::new("outbound"), &reply(lock(), arr(vec![s(b"none")])), None).unwrap();
    assert_eq!((missing.fence, missing.fence_unreadable), (None, false));
    let wrong = decode(&Keys::new("outbound"), &reply(lock(), arr(vec![s(b"hash")])), None).unwrap();
    assert_eq!((wrong.fence, wrong.fence_unreadable), (None, true));
}

#[test]
fn a_reply_of_the_wrong_shape_is_an_error() {
    assert!(decode(&Keys::new("outbound"), &Value::Int(3), None).is_err());
    assert!(decode(&Keys::new("outbound"), &arr(vec![Value::Nil]), None).is_err());
}

fn with_users(users: Value, flags: Value) -> Value {
    arr(vec![
        arr(vec![s(b"1"), s(b"0")]),
        arr(vec![s(b"none"), Value::Int(-2)]),
        arr(vec![s(b"none")]),
        users,
        flags,
        empty_set(),
        arr(vec![]),
    ])
}

#[test]
fn an_oversized_flag_is_unreadable_and_says_why() {
    let users = arr(vec![s(b"set"), Value::Int(2), arr(vec![s(b"alice"), s(b"mallory")])]);
    let flags = arr(vec![
        arr(vec![s(b"hash"), Value::Int(1), arr(vec![s(b"on"), s(b"0")])]),
        arr(vec![s(b"hash"), Value::Int(3), arr(vec![]), s(b"has a host of 10485760 bytes")]),
    ]);
    let snap = decode(&Keys::new("outbound"), &with_users(users, flags), None).unwrap();
    assert_eq!(snap.flags[0].on, Some(false));
    assert_eq!(snap.flags[1].on, None);
    assert_eq!(
        snap.problems,
        vec!["{outbound}:enabled:mallory has a host of 10485760 bytes, more than lockwatch ever writes there"]
    );
    assert!(matches!(snap.enabled(), crate::snapshot::Enabled::Unknown { .. }));
}

#[test]
fn a_registry_that_cannot_be_read_whole_leaves_the_flags_unknown() {
    for users in
        [arr(vec![s(b"set"), Value::Int(12_000), arr(vec![])]), arr(vec![s(b"string"), Value::Int(0), arr(vec![])])]
    {
        let snap = decode(&Keys::new("outbound"), &with_users(users, arr(vec![])), None).unwrap();
        assert_eq!(snap.flags.len(), 1);
        assert_eq!(snap.flags[0].user, "{outbound}:users");
        assert_eq!(snap.flags[0].on, None);
        assert!(snap.problems[0].starts_with("the registry {outbound}:users "), "{:?}", snap.problems);
    }
    let empty = decode(&Keys::new("outbound"), &with_users(empty_set(), arr(vec![])), None).unwrap();
    assert!(empty.flags.is_empty() && empty.problems.is_empty());
}

#[test]
fn flags_and_beats_pair_with_their_names() {
    let users = arr(vec![s(b"set"), Value::Int(2), arr(vec![s(b"bob"), s(b"alice")])]);
    let flags = arr(vec![
        arr(vec![s(b"hash"), Value::Int(3), arr(vec![s(b"on"), s(b"0")])]),
        arr(vec![s(b"hash"), Value::Int(3), arr(vec![s(b"on"), s(b"1"), s(b"time"), s(b"17"), s(b"host"), s(b"pc1")])]),
    ]);
    let nodes = arr(vec![s(b"set"), Value::Int(1), arr(vec![s(b"srv-a")])]);
    let beats =
        arr(vec![arr(vec![s(b"hash"), Value::Int(2), arr(vec![s(b"beat_ms"), s(b"99"), s(b"state"), s(b"running")])])]);
    let r = arr(vec![
        arr(vec![s(b"1"), s(b"0")]),
        arr(vec![s(b"none"), Value::Int(-2)]),
        arr(vec![s(b"none")]),
        users,
        flags,
        nodes,
        beats,
    ]);
    let snap = decode(&Keys::new("outbound"), &r, None).unwrap();
    assert_eq!(snap.flags[0].user, "alice");
    assert_eq!(snap.flags[0].on, Some(true));
    assert_eq!(snap.flags[0].host.as_deref(), Some("pc1"));
    assert_eq!(snap.flags[1].on, Some(false));
    assert_eq!(snap.beats[0].beat_ms, Some(99));
    assert!(snap.beats[0].claims_job());
    assert_eq!(snap.lock.kind, LockKind::None);
}

#[test]
fn presence_is_known_only_for_workers_that_say_they_hold_a_plain_or_sharded_one() {
    let nodes = arr(vec![s(b"set"), Value::Int(3), arr(vec![s(b"srv-a"), s(b"srv-b"), s(b"java")])]);
    let beat = |presence: &[u8]| {
        let mut fields = vec![s(b"beat_ms"), s(b"99")];
        if !presence.is_empty() {
            fields.extend([s(b"presence"), s(presence)]);
        }
        arr(vec![s(b"hash"), Value::Int(2), arr(fields)])
    };
    let with = |alive: Value| {
        let r = arr(vec![
            arr(vec![s(b"1"), s(b"0")]),
            arr(vec![s(b"none"), Value::Int(-2)]),
            arr(vec![s(b"none")]),
            empty_set(),
            arr(vec![]),
            nodes.clone(),
            // A plain subscription, a sharded one, and a claim of no known kind.
            arr(vec![beat(b"1"), beat(b"sharded"), beat(b"yes")]),
            alive,
        ]);
        let snap = decode(&Keys::new("outbound"), &r, None).unwrap();
        snap.beats.iter().map(|b| (b.node.clone(), b.present)).collect::<Vec<_>>()
    };
    let read = arr(vec![s(b"alive"), s(b"read"), arr(vec![Value::Int(1), Value::Int(0), Value::Int(-1)])]);
    assert_eq!(with(read), vec![("java".into(), None), ("srv-a".into(), Some(true)), ("srv-b".into(), Some(false))]);
    // Claims made in another server process (Redis failed over since) blame nobody.
    let elsewhere = arr(vec![s(b"alive"), s(b"read"), arr(vec![Value::Int(-2), Value::Int(-2), Value::Int(-1)])]);
    assert!(with(elsewhere).iter().all(|(_, p)| p.is_none()), "a claim made elsewhere blames nobody");
    let refused = arr(vec![s(b"alive"), s(b"refused"), arr(vec![])]);
    assert!(with(refused).iter().all(|(_, p)| p.is_none()), "a refused count blames nobody");
}

#[test]
fn a_glance_lays_time_lock_and_heartbeats_over_the_last_full_read() {
    let keys = Keys::new("outbound");
    let users = arr(vec![s(b"set"), Value::Int(1), arr(vec![s(b"alice")])]);
    let flags = arr(vec![arr(vec![s(b"hash"), Value::Int(1), arr(vec![s(b"on"), s(b"1")])])]);
    let mut full = with_users(users, flags);
    let Value::Array(items) = &mut full else { unreachable!() };
    items.push(arr(vec![
        s(b"acks"),
        s(b"read"),
        arr(vec![arr(vec![s(b"hash"), Value::Int(2), arr(vec![s(b"at_ms"), s(b"500"), s(b"until_ms"), s(b"1500")])])]),
    ]));
    items.push(arr(vec![s(b"fingerprint"), s(b"7|1-0|1|1")]));
    let (base, fingerprint) = decode_look(&keys, &full, None).unwrap();
    assert_eq!(fingerprint.as_deref(), Some("7|1-0|1|1"));
    assert_eq!(base.acks.len(), 1);

    let glance = arr(vec![
        s(b"glance"),
        s(b"7|1-0|1|1"),
        arr(vec![s(b"2"), s(b"0")]),
        arr(vec![s(b"hash"), Value::Int(29_000), Value::Int(1), arr(vec![s(b"uuid-a:1"), s(b"1")])]),
        arr(vec![s(b"srv-a")]),
        arr(vec![arr(vec![
            s(b"hash"),
            Value::Int(3),
            arr(vec![s(b"beat_ms"), s(b"1990"), s(b"lock_field"), s(b"uuid-a:1"), s(b"presence"), s(b"1")]),
        ])]),
        arr(vec![s(b"alive"), s(b"read"), arr(vec![Value::Int(0)])]),
    ]);
    let (snap, fingerprint) = decode_look(&keys, &glance, Some(&base)).unwrap();
    assert_eq!(fingerprint, None, "the full read stays the one to compare with");
    assert_eq!(snap.time_ms, 2_000);
    assert_eq!(snap.lock.holders, vec!["uuid-a:1"]);
    assert_eq!(snap.beats[0].beat_ms, Some(1_990));
    assert_eq!(snap.beats[0].present, Some(false));
    assert_eq!(snap.flags, base.flags, "flags as the full read found them");
    assert!(snap.acks.is_empty(), "an acknowledgement that ended since is gone");
    assert!(decode_look(&keys, &glance, None).is_err(), "a glance needs a full read under it");
}

#[test]
fn acks_pair_with_the_registry_and_only_those_in_force_count() {
    let users = arr(vec![s(b"set"), Value::Int(3), arr(vec![s(b"alice"), s(b"bob"), s(b"mallory")])]);
    let flags = arr(vec![arr(vec![s(b"none")]), arr(vec![s(b"none")]), arr(vec![s(b"none")])]);
    let mut r = with_users(users, flags);
    let ack = |at: &[u8], until: &[u8]| {
        arr(vec![
            s(b"hash"),
            Value::Int(3),
            arr(vec![s(b"at_ms"), s(at), s(b"until_ms"), s(until), s(b"note"), s(b"wh-a")]),
        ])
    };
    let Value::Array(items) = &mut r else { unreachable!() };
    items.push(arr(vec![
        s(b"acks"),
        s(b"read"),
        arr(vec![
            ack(b"500", b"2000"),
            ack(b"100", b"900"),
            arr(vec![s(b"hash"), Value::Int(3), arr(vec![]), s(b"has a note of 10485760 bytes")]),
        ]),
    ]));
    // Redis time 1 s: bob's ended at 0.9 s.
    let snap = decode(&Keys::new("outbound"), &r, None).unwrap();
    assert_eq!(snap.acks, vec![Ack { user: "alice".into(), at_ms: 500, until_ms: 2000, note: "wh-a".into() }]);
    assert_eq!(
        snap.problems,
        vec!["{outbound}:ack:mallory has a note of 10485760 bytes, more than lockwatch ever writes there"]
    );
}
