// A Redisson holder of the job's lock, for tests/redisson.rs: node-redisson
// (a port of Java Redisson's RLock: same hash layout, watchdog and unlock
// message) takes `{outbound}:lock` the way a Java service's
// `redisson.getLock("{outbound}:lock").lock()` does, waiting while it is held.
//
//   node hold.mjs REDIS_URL JOURNAL HOLD_MS|forever [WATCHDOG_MS]
//
// Prints `locked <ms since 1970>` once it holds the lock, then appends a tick
// `0 java <ns since 1970>` to JOURNAL every 50 ms (the line a lockwatch job
// writes, fence 0: Redisson has none). After HOLD_MS it writes a last tick,
// stops ticking, unlocks (DEL and PUBLISH 0 on
// `redisson_lock__channel:{outbound}:lock`) and prints `unlocked <ms>`;
// `forever` holds until killed, the watchdog renewing the lock every
// WATCHDOG_MS / 3 (default 3000: the lock outlives a SIGKILL by at most 3 s).
import { appendFileSync } from 'node:fs';
import redissonPkg from 'node-redisson';

const { Redisson } = redissonPkg;
const [url, journal, hold, watchdog = '3000'] = process.argv.slice(2);
if (!url || !journal || !hold) {
  console.error('usage: node hold.mjs REDIS_URL JOURNAL HOLD_MS|forever [WATCHDOG_MS]');
  process.exit(2);
}

const u = new URL(url);
const redisson = new Redisson({
  redis: {
    options: {
      host: u.hostname,
      port: Number(u.port || 6379),
      username: u.username ? decodeURIComponent(u.username) : undefined,
      password: u.password ? decodeURIComponent(u.password) : undefined,
      db: Number(u.pathname.slice(1) || 0),
      // A test's Redis goes away with the test: no reconnecting forever.
      maxRetriesPerRequest: 1,
    },
  },
  // The lease the watchdog renews (every third of it); the lock's PTTL.
  lockWatchdogTimeout: BigInt(watchdog),
});

const tick = () => appendFileSync(journal, `0 java ${BigInt(Date.now()) * 1_000_000n}\n`);
const say = (what) => process.stdout.write(`${what} ${Date.now()}\n`);

try {
  const lock = redisson.getLock('{outbound}:lock');
  await lock.lock();
  say('locked');
  tick();
  const ticking = setInterval(tick, 50);
  if (hold === 'forever') {
    await new Promise(() => {});
  }
  await new Promise((resolve) => setTimeout(resolve, Number(hold)));
  clearInterval(ticking);
  tick();
  await lock.unlock();
  say('unlocked');
  await redisson.quit();
  process.exit(0);
} catch (e) {
  console.error(`hold.mjs: ${e.stack ?? e}`);
  process.exit(1);
}
