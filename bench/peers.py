"""The peers lockwatch is measured against, each a small process that prints
JSON lines with wall-clock times (time.time(), the clock Redis uses too):

  redispy-holder KEY    redis-py's Lock(timeout=lease), re-acquired every lease/3
                        as a service's renewal thread would do; "release" on
                        stdin releases it
  redispy-waiter KEY    redis-py's blocking acquire with its default sleep (0.1 s)
  redisson-holder KEY   a Redisson-style RLock holder with a watchdog (renew every
                        lease/3); "release" on stdin unlocks and publishes 0
  redisson-waiter KEY   Redisson's RLock.lock(): subscribe to the unlock channel,
                        try the acquire script, wait for the 0 message or the TTL
  exists-poller KEY     the monitor the Redisson-lock articles propose: EXISTS on
                        the lock key every second

Lines: {"held": t}, {"waiting": t}, {"released": t}, {"seen": t}, {"gone": t}.
Usage: peers.py ROLE PORT KEY [LEASE_S]
"""
import json
import os
import sys
import threading
import time
import uuid

import redis

# Redisson's RLock scripts, in their documented layout: the lock is a hash,
# field "<client id>:<thread id>" -> hold count, expiry = lease.
ACQUIRE = """
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
"""
RENEW = """
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
"""
UNLOCK = """
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], 0)
return 1
"""


def say(**what):
    print(json.dumps(what), flush=True)


def unlock_channel(key):
    """Redisson's naming rule: the key is wrapped in braces unless it has one."""
    return f"redisson_lock__channel:{key}" if "{" in key else f"redisson_lock__channel:{{{key}}}"


def wait_for_release_line():
    for line in sys.stdin:
        if line.strip() == "release":
            return True
    return False


def redispy_holder(r, key, lease):
    # Not thread-local: the renewal thread must see the token.
    lock = r.lock(key, timeout=lease, thread_local=False)
    lock.acquire()
    say(held=time.time())
    stop = threading.Event()

    def renew():
        while not stop.wait(lease / 3):
            lock.reacquire()

    threading.Thread(target=renew, daemon=True).start()
    if wait_for_release_line():
        stop.set()
        say(released=time.time())
        lock.release()
    time.sleep(3600)


def redispy_waiter(r, key, lease):
    lock = r.lock(key, timeout=lease)
    if not lock.acquire(blocking=False):
        say(waiting=time.time())
        lock.acquire()
    say(held=time.time())
    time.sleep(3600)


def redisson_holder(r, key, lease):
    field = f"{uuid.uuid4()}:{threading.get_ident()}"
    acquire, renew, unlock = r.register_script(ACQUIRE), r.register_script(RENEW), r.register_script(UNLOCK)
    lease_ms = int(lease * 1000)
    while acquire(keys=[key], args=[lease_ms, field]) is not None:
        time.sleep(0.1)
    say(held=time.time())
    stop = threading.Event()

    def watchdog():
        while not stop.wait(lease / 3):
            renew(keys=[key], args=[lease_ms, field])

    threading.Thread(target=watchdog, daemon=True).start()
    if wait_for_release_line():
        stop.set()
        say(released=time.time())
        unlock(keys=[key, unlock_channel(key)], args=[lease_ms, field])
    time.sleep(3600)


def redisson_waiter(r, key, lease):
    field = f"{uuid.uuid4()}:{threading.get_ident()}"
    acquire = r.register_script(ACQUIRE)
    pubsub = r.pubsub()
    pubsub.subscribe(unlock_channel(key))
    # Wait for the subscription to be confirmed, as Redisson does before trying.
    while (pubsub.get_message(timeout=1.0) or {}).get("type") != "subscribe":
        pass
    said = False
    while True:
        ttl = acquire(keys=[key], args=[int(lease * 1000), field])
        if ttl is None:
            break
        if not said:
            say(waiting=time.time())
            said = True
        # The unlock message, or the lease running out, whichever first.
        deadline = time.monotonic() + max(ttl, 0) / 1000
        while time.monotonic() < deadline:
            msg = pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))
            if msg and msg.get("type") == "message" and msg.get("data") in ("0", b"0"):
                break
    say(held=time.time())
    time.sleep(3600)


def exists_poller(r, key, _lease):
    seen = False
    while True:
        exists = r.exists(key) == 1
        if exists and not seen:
            seen = True
            say(seen=time.time())
        elif seen and not exists:
            say(gone=time.time())
            time.sleep(3600)
        time.sleep(1.0)


ROLES = {
    "redispy-holder": redispy_holder,
    "redispy-waiter": redispy_waiter,
    "redisson-holder": redisson_holder,
    "redisson-waiter": redisson_waiter,
    "exists-poller": exists_poller,
}


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ROLES:
        sys.exit(f"usage: peers.py {{{'|'.join(ROLES)}}} PORT KEY [LEASE_S]")
    role, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    lease = float(sys.argv[4]) if len(sys.argv) > 4 else 30.0
    r = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
    try:
        ROLES[role](r, key, lease)
    except KeyboardInterrupt:
        pass
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
