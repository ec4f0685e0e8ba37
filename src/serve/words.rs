//! The robots' catalog: every sentence a chat message holds, in English
//! and Simplified Chinese side by side, worded as the tray's notifications
//! are (`src-tauri/locales/`), with the same facts in both. The tray's
//! Fluent catalog lives in the desktop crate, which the library cannot
//! reach; these few lines are the server's own.

use crate::status::{EventKind, Stall, State};

use super::robots::Language;

/// One thing to say, with its facts.
#[derive(Debug, Clone, Copy)]
pub enum Say<'a> {
    /// The title of an incident: what happened to the job.
    Title {
        kind: EventKind,
        job: &'a str,
        from: Option<&'a str>,
        to: Option<&'a str>,
        stall: Option<Stall>,
    },
    /// What a stall means: `age` the heartbeat's, or the lock's time left.
    Stall {
        stall: Stall,
        server: &'a str,
        duration: Option<&'a str>,
    },
    /// Who has the job enabled although no server runs it.
    EnabledBy {
        users: &'a str,
    },
    /// After a failover: no server is left to take the job over.
    NoStandbyLeft,
    /// The serve process that saw Redis go, and from where.
    SeenFrom {
        node: &'a str,
    },
    Time {
        at: &'a str,
    },
    Now {
        state: State,
        server: Option<&'a str>,
    },
    OnIt {
        who: &'a str,
    },
    NobodyOnIt,
    /// The title of a summary of repeats.
    RepeatsTitle {
        job: &'a str,
        n: u32,
    },
    /// `counts`: `died 3×, recovered 3×` already in this language.
    Repeats {
        counts: &'a str,
        first: &'a str,
        last: &'a str,
    },
    /// An event's name, in counts of repeats.
    Kind {
        kind: EventKind,
    },
    /// Several messages folded into one.
    FoldedTitle {
        n: usize,
    },
    TestTitle,
    TestBody {
        node: &'a str,
    },
    /// The title of an escalation: `what` (an incident's title) with nobody on it `after` its message.
    EscalatedTitle {
        after: &'a str,
        what: &'a str,
    },
    /// Who was told of it first, and that nobody took it on.
    ToldFirst {
        robots: &'a str,
    },
}

/// The sentence for `what` in `lang`.
pub fn say(lang: Language, what: Say<'_>) -> String {
    match lang {
        Language::En => en(what),
        Language::ZhCn => zh(what),
    }
}

/// The separator of a list.
pub fn list(lang: Language, items: &[String]) -> String {
    items.join(if lang == Language::ZhCn { "、" } else { ", " })
}

fn en(what: Say<'_>) -> String {
    match what {
        Say::Title { kind, job, from, to, stall } => match (kind, from, to) {
            (EventKind::Died, Some(from), _) => format!("{job} died on {from}"),
            (EventKind::Died, None, _) => format!("{job} died"),
            (EventKind::DataLost, ..) => format!("Redis lost the data of {job}"),
            (EventKind::Conflict, ..) => format!("{job}: two servers run it"),
            (EventKind::Failover, Some(from), Some(to)) => format!("{job} moved from {from} to {to}"),
            (EventKind::Failover, ..) => format!("{job} moved to another server"),
            (EventKind::Restarted, _, Some(to)) => format!("{job} restarted on {to}"),
            (EventKind::Restarted, ..) => format!("{job} restarted"),
            (EventKind::Stalled, Some(from), _) if stall == Some(Stall::Dying) => format!("{job} is dying on {from}"),
            (EventKind::Stalled, Some(from), _) => format!("{job} is stuck on {from}"),
            (EventKind::Stalled, ..) => format!("{job} is stuck"),
            (EventKind::Recovered, ..) => format!("{job} runs again"),
            (EventKind::Started, ..) => format!("{job} started"),
            (EventKind::Stopped, ..) => format!("{job} stopped"),
            (EventKind::Unreachable, ..) => format!("Redis unreachable: the state of {job} is unknown"),
            (EventKind::Reachable, ..) => format!("Redis reachable again: {job} is watched again"),
            (EventKind::StandbyLost, ..) => format!("{job} has no standby left"),
            (EventKind::StandbyBack, ..) => format!("{job} has a standby again"),
        },
        Say::Stall { stall: Stall::Hung, server, duration } => format!(
            "{server}'s heartbeat is {} old, yet the lock is still renewed: the job may hang.",
            duration.unwrap_or("some time")
        ),
        Say::Stall { stall: Stall::Dying, server, duration: Some(left) } => format!(
            "{server} no longer keeps the lock (its process died or lost its link); the lock expires in {left}, then another server takes over."
        ),
        Say::Stall { stall: Stall::Dying, server, duration: None } => format!(
            "{server} no longer keeps the lock, which never expires: if that server is gone, delete the lock by hand."
        ),
        Say::EnabledBy { users } => format!("Enabled by {users}, yet no server runs it."),
        Say::SeenFrom { node } => format!("Seen from {node}; it is not known whether the job still runs."),
        Say::NoStandbyLeft => "No other server is left to take it over if it stops there.".to_owned(),
        Say::Time { at } => format!("Time: {at}"),
        Say::Now { state, server: Some(server) } => format!("Now: {} on {server}", state_en(state)),
        Say::Now { state, server: None } => format!("Now: {}", state_en(state)),
        Say::OnIt { who } => format!("On it: {who}"),
        Say::NobodyOnIt => "On it: nobody yet (lockwatch ack, or \"I'm on it\" in the tray)".to_owned(),
        Say::RepeatsTitle { job, n } => format!("{job}: {n} more times since the last message"),
        Say::Repeats { counts, first, last } => format!("{counts}, from {first} to {last}."),
        Say::Kind { kind } => kind_en(kind).to_owned(),
        Say::FoldedTitle { n } => format!("lockwatch: {n} incidents"),
        Say::TestTitle => "lockwatch test message".to_owned(),
        Say::TestBody { node } => {
            format!("Sent by lockwatch serve on {node}: this robot works, incidents of the job will arrive here.")
        }
        Say::EscalatedTitle { after, what } => format!("Nobody on it after {after}: {what}"),
        Say::ToldFirst { robots } => format!("Told first: {robots}; nobody has said they are on it."),
    }
}

fn zh(what: Say<'_>) -> String {
    match what {
        Say::Title { kind, job, from, to, stall } => match (kind, from, to) {
            (EventKind::Died, Some(from), _) => format!("{job} 在 {from} 上意外停止"),
            (EventKind::Died, None, _) => format!("{job} 意外停止"),
            (EventKind::DataLost, ..) => format!("Redis 丢失了 {job} 的数据"),
            (EventKind::Conflict, ..) => format!("{job}：两台服务器同时在运行"),
            (EventKind::Failover, Some(from), Some(to)) => format!("{job} 已从 {from} 切换到 {to}"),
            (EventKind::Failover, ..) => format!("{job} 已切换到另一台服务器"),
            (EventKind::Restarted, _, Some(to)) => format!("{job} 已在 {to} 上重新启动"),
            (EventKind::Restarted, ..) => format!("{job} 已重新启动"),
            (EventKind::Stalled, Some(from), _) if stall == Some(Stall::Dying) => {
                format!("{job} 在 {from} 上失去联系，即将由其他服务器接管")
            }
            (EventKind::Stalled, Some(from), _) => format!("{job} 在 {from} 上卡住了"),
            (EventKind::Stalled, ..) => format!("{job} 卡住了"),
            (EventKind::Recovered, ..) => format!("{job} 已恢复运行"),
            (EventKind::Started, ..) => format!("{job} 已开始运行"),
            (EventKind::Stopped, ..) => format!("{job} 已停止"),
            (EventKind::Unreachable, ..) => format!("无法连接 Redis：{job} 的状态未知"),
            (EventKind::Reachable, ..) => format!("Redis 已恢复连接：{job} 重新受到监控"),
            (EventKind::StandbyLost, ..) => format!("{job} 已没有备用服务器"),
            (EventKind::StandbyBack, ..) => format!("{job} 重新有了备用服务器"),
        },
        Say::Stall { stall: Stall::Hung, server, duration } => {
            format!("{server} 的心跳已 {} 未更新，但锁仍在续期：任务可能卡住了。", duration.unwrap_or("一段时间"))
        }
        Say::Stall { stall: Stall::Dying, server, duration: Some(left) } => {
            format!("{server} 已不再持有锁（程序已退出或与 Redis 断开）；锁将在 {left}后到期，随后由另一台服务器接管。")
        }
        Say::Stall { stall: Stall::Dying, server, duration: None } => {
            format!("{server} 已不再持有锁，而此锁永不过期：如果该服务器已不在运行，需要手动删除这把锁。")
        }
        Say::EnabledBy { users } => format!("{users} 已启用此任务，但没有服务器在运行。"),
        Say::SeenFrom { node } => format!("由 {node} 发现；无法确定任务是否仍在运行。"),
        Say::NoStandbyLeft => "已没有其他服务器可以接管：若它在那里停止，将无人接手。".to_owned(),
        Say::Time { at } => format!("时间：{at}"),
        Say::Now { state, server: Some(server) } => format!("当前：{}，服务器 {server}", state_zh(state)),
        Say::Now { state, server: None } => format!("当前：{}", state_zh(state)),
        Say::OnIt { who } => format!("处理人：{who}"),
        Say::NobodyOnIt => "处理人：暂无（lockwatch ack，或托盘菜单中的“我来处理”）".to_owned(),
        Say::RepeatsTitle { job, n } => format!("{job}：自上条消息以来又发生 {n} 次"),
        Say::Repeats { counts, first, last } => format!("{counts}，从 {first} 到 {last}。"),
        Say::Kind { kind } => kind_zh(kind).to_owned(),
        Say::FoldedTitle { n } => format!("lockwatch：{n} 条事件"),
        Say::TestTitle => "lockwatch 测试消息".to_owned(),
        Say::TestBody { node } => {
            format!("由 {node} 上的 lockwatch serve 发送：此机器人工作正常，任务的事件将发到这里。")
        }
        Say::EscalatedTitle { after, what } => format!("{after}内无人处理：{what}"),
        Say::ToldFirst { robots } => format!("已先通知：{robots}；至今无人表示正在处理。"),
    }
}

fn state_en(state: State) -> &'static str {
    state.as_str()
}

fn state_zh(state: State) -> &'static str {
    match state {
        State::Running => "运行中",
        State::Stale => "停滞",
        State::Down => "未运行",
        State::Pending => "等待启动",
        State::Stopped => "已停止",
        State::Conflict => "冲突",
        State::Unknown => "未知",
    }
}

fn kind_en(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Died => "died",
        EventKind::DataLost => "data lost",
        EventKind::Failover => "moved",
        EventKind::Restarted => "restarted",
        EventKind::Conflict => "two servers",
        EventKind::Stalled => "stuck",
        EventKind::Recovered => "ran again",
        EventKind::Started => "started",
        EventKind::Stopped => "stopped",
        EventKind::Unreachable => "Redis unreachable",
        EventKind::Reachable => "Redis back",
        EventKind::StandbyLost => "standby lost",
        EventKind::StandbyBack => "standby back",
    }
}

fn kind_zh(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Died => "意外停止",
        EventKind::DataLost => "丢失数据",
        EventKind::Failover => "切换服务器",
        EventKind::Restarted => "重新启动",
        EventKind::Conflict => "两台服务器同时运行",
        EventKind::Stalled => "卡住",
        EventKind::Recovered => "恢复运行",
        EventKind::Started => "开始运行",
        EventKind::Stopped => "停止",
        EventKind::Unreachable => "无法连接 Redis",
        EventKind::Reachable => "Redis 恢复连接",
        EventKind::StandbyLost => "失去备用服务器",
        EventKind::StandbyBack => "备用服务器恢复",
    }
}

/// A duration for people in `lang`: `12 s` / `12 秒`, `4 min 5 s` / `4 分 5 秒`.
pub fn duration(lang: Language, ms: u64) -> String {
    match lang {
        Language::En => crate::duration::human_duration(ms),
        Language::ZhCn => match ms {
            0..1_000 => format!("{ms} 毫秒"),
            1_000..60_000 => format!("{} 秒", ms / 1000),
            60_000..3_600_000 => format!("{} 分 {} 秒", ms / 60_000, ms / 1000 % 60),
            _ => format!("{} 小时 {} 分", ms / 3_600_000, ms / 60_000 % 60),
        },
    }
}
