"""What two idle workers of one job cost Redis: its CPU over a window (30 s
by default) after 15 s of settling, and the ten commands that took the
longest, with 20 users' flags on. WORKERS=0 gives the baseline of the same
Redis with nothing but the data.

Usage: /usr/bin/python3 bench/idle_workers.py target/release/lockwatch LEASE [WINDOW_S]
"""
import subprocess, sys, time, os, socket, redis
LW = sys.argv[1]; lease = sys.argv[2]; window = float(sys.argv[3]) if len(sys.argv) > 3 else 30
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
d = f"/tmp/lockwatch-idle/{port}"; os.makedirs(d, exist_ok=True)
rs = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", d], stdout=subprocess.DEVNULL)
r = redis.Redis(port=port, decode_responses=True)
for _ in range(100):
    try: r.ping(); break
    except Exception: time.sleep(0.05)
url = f"redis://127.0.0.1:{port}"
for i in range(20):
    subprocess.run([LW, "--redis", url, "enable", "--user", f"user{i+1:02}"], check=True, capture_output=True)
nodes = ("srv-a", "srv-b")[:int(os.environ.get("WORKERS", "2"))]
ws = [subprocess.Popen([LW, "--redis", url, "worker", "--node", n, "--lease", lease, "--", "sleep", "100000"], stdout=subprocess.DEVNULL, stderr=open(f"{d}/{n}.log", "w")) for n in nodes]
time.sleep(15)
def cpu():
    i = r.info("cpu"); return i["used_cpu_sys"] + i["used_cpu_user"]
r.config_resetstat(); c0 = cpu(); t0 = time.monotonic()
time.sleep(window)
c1 = cpu(); t1 = time.monotonic()
stats = {k.removeprefix("cmdstat_"): v for k, v in r.info("commandstats").items()}
print(f"lease {lease}: Redis CPU {1000*(c1-c0)*30/(t1-t0):.0f} ms per 30 s")
for k, v in sorted(stats.items(), key=lambda kv: -kv[1]["usec"])[:10]:
    print(f"  {k:14} {v['calls']:6} calls  {v['usec_per_call']:8.1f} µs/call  {v['usec']/1000:8.1f} ms")
for w in ws: w.terminate()
for w in ws: w.wait()
rs.terminate(); rs.wait()
