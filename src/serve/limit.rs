//! Each robot's own rate limit, kept on this side: DingTalk and WeCom take
//! 20 messages a minute, Feishu 5 a second and 100 a minute, and answer
//! "too fast" past that (and DingTalk mutes a robot for ten minutes). The
//! robots file may add a window of its own (`limit = "10/1m"`, for a robot
//! that other programs post to as well): kept besides the robot's, so it
//! can only make lockwatch post less. Pure: time is an argument, in ms of
//! any monotonic clock. This count is the process's own; `quota` keeps the
//! same windows in Redis, for every serve process of the job together.

use std::collections::VecDeque;

use super::robots::Kind;

/// The windows of one robot: at most `n` sends within `ms`.
#[derive(Debug, Clone)]
pub struct Limit {
    windows: Vec<(u64, usize)>,
    /// When each send within the longest window went.
    sent: VecDeque<u64>,
}

impl Limit {
    /// The documented limits of `kind`; a webhook has none.
    pub fn of(kind: Kind) -> Limit {
        let windows = match kind {
            Kind::DingTalk | Kind::WeCom => vec![(60_000, 20)],
            Kind::Feishu => vec![(1_000, 5), (60_000, 100)],
            Kind::Webhook => vec![],
        };
        Limit::new(windows)
    }

    /// The documented limits of `kind`, and `extra` (at most `n` sends
    /// within `ms`) besides, when the robots file gives one.
    pub fn for_robot(kind: Kind, extra: Option<(u64, usize)>) -> Limit {
        let mut limit = Limit::of(kind);
        limit.windows.extend(extra);
        limit
    }

    /// At most `n` sends within each `(ms, n)`.
    pub fn new(windows: Vec<(u64, usize)>) -> Limit {
        Limit { windows, sent: VecDeque::new() }
    }

    /// Its windows, `(ms, n)`: at most `n` sends within `ms` each; none
    /// for a webhook without a `limit` of the file's.
    pub fn windows(&self) -> &[(u64, usize)] {
        &self.windows
    }

    /// How long to wait from `now` before the next send keeps every window.
    pub fn wait(&self, now: u64) -> u64 {
        self.windows
            .iter()
            .filter_map(|&(ms, n)| {
                let within: Vec<u64> = self.sent.iter().copied().filter(|&t| t + ms > now).collect();
                (within.len() >= n).then(|| within[within.len() - n] + ms - now)
            })
            .max()
            .unwrap_or(0)
    }

    /// Counts a send at `now`.
    pub fn record(&mut self, now: u64) {
        self.sent.push_back(now);
        let longest = self.windows.iter().map(|w| w.0).max().unwrap_or(0);
        while self.sent.front().is_some_and(|&t| t + longest <= now) {
            self.sent.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends as fast as the limit lets, from 0 until `until`: the send times.
    fn flood(mut limit: Limit, until: u64) -> Vec<u64> {
        let (mut now, mut sent) = (0, Vec::new());
        while now < until {
            now += limit.wait(now);
            if now >= until {
                break;
            }
            limit.record(now);
            sent.push(now);
        }
        sent
    }

    fn most_within(sent: &[u64], ms: u64) -> usize {
        sent.iter().map(|&t| sent.iter().filter(|&&u| u >= t && u < t + ms).count()).max().unwrap_or(0)
    }

    #[test]
    fn dingtalk_and_wecom_send_twenty_a_minute() {
        for kind in [Kind::DingTalk, Kind::WeCom] {
            let sent = flood(Limit::of(kind), 180_000);
            assert_eq!(sent.len(), 60);
            assert_eq!(most_within(&sent, 60_000), 20);
            assert_eq!(sent[20], 60_000, "the 21st waits a minute after the first");
        }
    }

    #[test]
    fn feishu_sends_five_a_second_and_a_hundred_a_minute() {
        let sent = flood(Limit::of(Kind::Feishu), 120_000);
        assert_eq!(most_within(&sent, 1_000), 5);
        assert_eq!(most_within(&sent, 60_000), 100);
        assert_eq!(sent.len(), 200);
    }

    #[test]
    fn a_window_of_the_files_own_is_kept_besides_the_robots() {
        let sent = flood(Limit::for_robot(Kind::DingTalk, Some((2_000, 4))), 180_000);
        assert_eq!(most_within(&sent, 2_000), 4);
        assert_eq!(most_within(&sent, 60_000), 20, "DingTalk's own limit still holds");
        assert_eq!(sent.len(), 60);
        let looser = flood(Limit::for_robot(Kind::DingTalk, Some((1_000, 1_000))), 60_000);
        assert_eq!(looser.len(), 20, "a looser window changes nothing");
        let hook = flood(Limit::for_robot(Kind::Webhook, Some((1_000, 2))), 10_000);
        assert_eq!(hook.len(), 20);
    }

    #[test]
    fn a_webhook_waits_for_nothing() {
        let mut limit = Limit::of(Kind::Webhook);
        for _ in 0..1000 {
            limit.record(5);
        }
        assert_eq!(limit.wait(5), 0);
    }
}
