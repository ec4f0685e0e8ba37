//! What a robot is sent: a [`Story`] (an incident, the repeats of one, a
//! test) told as a [`Message`] in the robot's language, then as the JSON
//! its API takes ([`payload`]), several messages folded into one. Pure:
//! the tests read every kind in both languages.

use serde_json::{Value, json};

use crate::duration::{date_time, utc_zone};
use crate::status::{Event, EventKind, State, Status};

use super::robots::{Kind, Language, Robot};
use super::words::{Say, duration, list, say};

/// Where the job stands now, as every message closes with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Now {
    /// `None` before the first look.
    pub state: Option<State>,
    /// The server that runs it.
    pub server: Option<String>,
    /// Who has it enabled.
    pub enabled: Vec<String>,
    /// Who said they are on it, with their note.
    pub on_it: Vec<(String, String)>,
}

impl Now {
    /// The facts of `status`.
    pub fn of(status: &Status) -> Now {
        Now {
            state: Some(status.state),
            server: status.holder.as_ref().map(|h| h.as_ref().to_string()),
            enabled: status.enabled_users.clone(),
            on_it: status.acks.iter().map(|a| (a.user.clone(), a.note.clone())).collect(),
        }
    }
}

/// Something to tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Story {
    /// One incident; `seen_by` is the serve process that saw it.
    Incident { event: Event, now: Now, seen_by: String },
    /// An incident that kept repeating: how often each event came, first
    /// and last, since the message about it.
    Repeats { job: String, counts: Vec<(EventKind, u32)>, first_ms: u64, last_ms: u64, now: Now },
    /// `lockwatch serve --check`.
    Test { node: String, at_ms: u64 },
    /// An incident still there with nobody on it `after_ms` after its
    /// message, for the escalation robots; `told` names the robots told first.
    Escalation { event: Event, now: Now, after_ms: u64, told: Vec<String> },
}

/// A story told in one language: a title and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub title: String,
    pub lines: Vec<String>,
    /// Whether it tells of trouble (red) rather than its end (green).
    pub alarm: bool,
}

/// Events that are trouble; their recoveries and the rest are not.
pub fn is_alarm(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::Died
            | EventKind::Conflict
            | EventKind::DataLost
            | EventKind::Stalled
            | EventKind::Unreachable
            | EventKind::StandbyLost
    )
}

/// `story` in `robot`'s language and time zone.
pub fn render(story: &Story, lang: Language, offset_min: i32) -> Message {
    let time = |ms: u64| format!("{} ({})", date_time(ms, offset_min), utc_zone(offset_min));
    match story {
        Story::Incident { event: e, now, seen_by } => {
            let (from, to) = (e.from.as_ref().map(|h| h.to_string()), e.to.as_ref().map(|h| h.to_string()));
            let title = say(
                lang,
                Say::Title { kind: e.event, job: &e.job, from: from.as_deref(), to: to.as_deref(), stall: e.stall },
            );
            let mut lines = Vec::new();
            match e.event {
                EventKind::Stalled => {
                    if let (Some(stall), Some(server)) = (e.stall, from.as_deref()) {
                        let left = e.ms.map(|ms| duration(lang, ms));
                        lines.push(say(lang, Say::Stall { stall, server, duration: left.as_deref() }));
                    }
                }
                EventKind::Died if !now.enabled.is_empty() => {
                    lines.push(say(lang, Say::EnabledBy { users: &list(lang, &now.enabled) }));
                }
                EventKind::Unreachable => lines.push(say(lang, Say::SeenFrom { node: seen_by })),
                EventKind::Failover if e.no_standby => lines.push(say(lang, Say::NoStandbyLeft)),
                _ => {}
            }
            lines.push(say(lang, Say::Time { at: &time(e.at_ms) }));
            close(&mut lines, lang, now);
            Message { title, lines, alarm: is_alarm(e.event) }
        }
        Story::Repeats { job, counts, first_ms, last_ms, now } => {
            let n = counts.iter().map(|(_, n)| n).sum();
            let counted: Vec<String> =
                counts.iter().map(|(kind, n)| format!("{} {n}×", say(lang, Say::Kind { kind: *kind }))).collect();
            let mut lines = vec![say(
                lang,
                Say::Repeats { counts: &list(lang, &counted), first: &time(*first_ms), last: &time(*last_ms) },
            )];
            close(&mut lines, lang, now);
            let alarm = now.state.is_none_or(|s| s.severity() > State::Pending.severity());
            Message { title: say(lang, Say::RepeatsTitle { job, n }), lines, alarm }
        }
        Story::Test { node, at_ms } => Message {
            title: say(lang, Say::TestTitle),
            lines: vec![say(lang, Say::TestBody { node }), say(lang, Say::Time { at: &time(*at_ms) })],
            alarm: false,
        },
        Story::Escalation { event: e, now, after_ms, told } => {
            let (from, to) = (e.from.as_ref().map(|h| h.to_string()), e.to.as_ref().map(|h| h.to_string()));
            let what = say(
                lang,
                Say::Title { kind: e.event, job: &e.job, from: from.as_deref(), to: to.as_deref(), stall: e.stall },
            );
            let title = say(lang, Say::EscalatedTitle { after: &duration(lang, *after_ms), what: &what });
            let mut lines = vec![
                say(lang, Say::ToldFirst { robots: &list(lang, told) }),
                say(lang, Say::Time { at: &time(e.at_ms) }),
            ];
            close(&mut lines, lang, now);
            Message { title, lines, alarm: true }
        }
    }
}

/// The lines every incident closes with: where the job stands, who is on it.
fn close(lines: &mut Vec<String>, lang: Language, now: &Now) {
    if let Some(state) = now.state {
        lines.push(say(lang, Say::Now { state, server: now.server.as_deref() }));
    }
    if now.on_it.is_empty() {
        lines.push(say(lang, Say::NobodyOnIt));
    } else {
        let who: Vec<String> = now
            .on_it
            .iter()
            .map(|(user, note)| match (note.is_empty(), lang) {
                (true, _) => inert(user),
                (false, Language::En) => format!("{} ({})", inert(user), inert(note)),
                (false, Language::ZhCn) => format!("{}（{}）", inert(user), inert(note)),
            })
            .collect();
        lines.push(say(lang, Say::OnIt { who: &list(lang, &who) }));
    }
}

/// A supervisor's own words (her note, written with her Redis rights) as
/// text no robot renders as a link, a mention or markup: the characters
/// markdown, Feishu's `lark_md` and their tags are made of become their
/// full-width look-alikes, a URL's `://` and a bare `www.` are broken,
/// control and line-breaking characters become spaces, and the characters
/// that reorder text on screen (bidi overrides and isolates) are dropped.
fn inert(text: &str) -> String {
    let text: String = text
        .chars()
        .filter(|c| !matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
        .map(|c| match c {
            '[' => '［',
            ']' => '］',
            '(' => '（',
            ')' => '）',
            '<' => '＜',
            '>' => '＞',
            '*' => '＊',
            '`' => '＇',
            '#' => '＃',
            '@' => '＠',
            '_' => '＿',
            '~' => '～',
            '|' => '｜',
            '\u{2028}' | '\u{2029}' => ' ',
            c if c.is_control() => ' ',
            other => other,
        })
        .collect();
    text.replace("://", "：//").replace("www.", "www．").replace("WWW.", "WWW．")
}

/// The title of `messages` folded into one.
fn title(lang: Language, messages: &[Message]) -> String {
    match messages {
        [one] => one.title.clone(),
        many => say(lang, Say::FoldedTitle { n: many.len() }),
    }
}

/// Markdown as DingTalk and WeCom read it: a heading per message, a line each.
fn markdown(messages: &[Message]) -> String {
    text(messages, "### ", "- ")
}

/// Plain text, for a WeCom text message (the only kind it @-mentions in).
fn plain(messages: &[Message]) -> String {
    text(messages, "", "")
}

/// Each message's title after `heading`, its lines after `bullet`.
fn text(messages: &[Message], heading: &str, bullet: &str) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&format!("{heading}{}\n", m.title));
        for line in &m.lines {
            out.push_str(&format!("{bullet}{line}\n"));
        }
        out.push('\n');
    }
    out.trim_end().to_owned()
}

/// The JSON body `robot` takes for `messages` (one, or a burst folded
/// into one), before any signature. Not for webhooks, which take events.
pub fn payload(robot: &Robot, messages: &[Message]) -> Value {
    let lang = robot.language;
    let title = title(lang, messages);
    match robot.kind {
        Kind::DingTalk => {
            // DingTalk @s a mobile only when the text holds `@<mobile>` too.
            let mut text = markdown(messages);
            if !robot.mention.is_empty() {
                let ats: Vec<String> = robot.mention.iter().map(|m| format!("@{m}")).collect();
                text.push_str(&format!("\n\n{}", ats.join(" ")));
            }
            json!({
                "msgtype": "markdown",
                "markdown": { "title": title, "text": text },
                "at": { "atMobiles": robot.mention, "isAtAll": false },
            })
        }
        // WeCom's markdown ignores mentioned_mobile_list: a robot that @s gets text.
        Kind::WeCom if !robot.mention.is_empty() => json!({
            "msgtype": "text",
            "text": { "content": plain(messages), "mentioned_mobile_list": robot.mention },
        }),
        Kind::WeCom => json!({ "msgtype": "markdown", "markdown": { "content": markdown(messages) } }),
        Kind::Feishu => {
            let mut elements = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                if i > 0 {
                    elements.push(json!({ "tag": "hr" }));
                }
                let mut text = if messages.len() > 1 { format!("**{}**\n", m.title) } else { String::new() };
                text.push_str(&m.lines.join("\n"));
                elements.push(json!({ "tag": "div", "text": { "tag": "lark_md", "content": text } }));
            }
            let template = if messages.iter().any(|m| m.alarm) { "red" } else { "green" };
            json!({
                "msg_type": "interactive",
                "card": {
                    "config": { "wide_screen_mode": true },
                    "header": { "title": { "tag": "plain_text", "content": title }, "template": template },
                    "elements": elements,
                },
            })
        }
        Kind::Webhook => json!({ "title": title, "text": plain(messages) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{HolderRef, Stall};

    fn node(name: &str) -> Option<HolderRef> {
        Some(HolderRef { field: format!("{name}-uuid:1"), node: Some(name.to_owned()) })
    }

    fn event(kind: EventKind) -> Event {
        Event {
            event: kind,
            job: "outbound".into(),
            at_ms: 1_700_000_000_000,
            from: node("wh-a"),
            to: node("wh-b"),
            reason: String::new(),
            stall: (kind == EventKind::Stalled).then_some(Stall::Hung),
            ms: (kind == EventKind::Stalled).then_some(12_000),
            no_standby: false,
        }
    }

    fn now() -> Now {
        Now {
            state: Some(State::Running),
            server: Some("wh-b".into()),
            enabled: vec!["alice".into()],
            on_it: vec![("bob".into(), "checking wh-a".into())],
        }
    }

    const KINDS: [EventKind; 10] = [
        EventKind::Died,
        EventKind::Failover,
        EventKind::Restarted,
        EventKind::Conflict,
        EventKind::Stalled,
        EventKind::DataLost,
        EventKind::Unreachable,
        EventKind::StandbyLost,
        EventKind::Recovered,
        EventKind::Reachable,
    ];

    #[test]
    fn both_languages_say_the_same_facts() {
        for kind in KINDS {
            let story = Story::Incident { event: event(kind), now: now(), seen_by: "serve-1".into() };
            let en = render(&story, Language::En, 480);
            let zh = render(&story, Language::ZhCn, 480);
            let (en, zh) =
                (format!("{} {}", en.title, en.lines.join(" ")), format!("{} {}", zh.title, zh.lines.join(" ")));
            // The job, the time (UTC+8), the server now, who is on it and why, in both.
            for fact in ["outbound", "2023-11-15 06:13:20 (UTC+8)", "wh-b", "bob", "checking wh-a"] {
                assert!(en.contains(fact) && zh.contains(fact), "{kind:?} lacks {fact}:\n{en}\n{zh}");
            }
            for fact in ["wh-a", "alice", "serve-1", "12"] {
                assert_eq!(en.contains(fact), zh.contains(fact), "{kind:?}: {fact} in one language only:\n{en}\n{zh}");
            }
            assert!(zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)), "{zh}");
        }
    }

    #[test]
    fn a_supervisors_note_cannot_make_a_robot_post_a_link_a_mention_or_markup() {
        let note = "[confirm](http://evil.example/p) <at id=all></at> **now** @all\n### fake _it_ ~~s~~ |a|b| \
                    www.evil.example\u{2028}x\u{85}\t\u{1b}[31m \u{202e}reversed\u{2066}";
        let story = Story::Incident {
            event: Event { to: None, ..event(EventKind::Died) },
            now: Now { on_it: vec![("alice".into(), note.into())], ..now() },
            seen_by: "s".into(),
        };
        for lang in [Language::En, Language::ZhCn] {
            let text = markdown(&[render(&story, lang, 0)]);
            let active = ["[", "](", "<at", "://", "**", "@all", "\n###", "_it_", "~~", "|a|", "www.", "\u{2028}"];
            let hidden = ["\u{85}", "\t", "\u{1b}", "\u{202e}", "\u{2066}"];
            for active in active.iter().chain(&hidden) {
                assert!(!text.contains(active), "{active:?} reaches the robot: {text}");
            }
            assert!(text.contains("confirm") && text.contains("evil.example"), "her words stay readable: {text}");
        }
    }

    #[test]
    fn a_death_names_the_server_and_who_enabled_it_and_nobody_on_it() {
        let story = Story::Incident {
            event: Event { to: None, ..event(EventKind::Died) },
            now: Now { state: Some(State::Down), server: None, on_it: vec![], ..now() },
            seen_by: "s".into(),
        };
        let m = render(&story, Language::En, 0);
        assert_eq!(m.title, "outbound died on wh-a");
        assert_eq!(
            m.lines,
            [
                "Enabled by alice, yet no server runs it.",
                "Time: 2023-11-14 22:13:20 (UTC)",
                "Now: down",
                "On it: nobody yet (lockwatch ack, or \"I'm on it\" in the tray)"
            ]
        );
        assert!(m.alarm);
    }

    #[test]
    fn repeats_count_each_event_between_first_and_last() {
        let story = Story::Repeats {
            job: "outbound".into(),
            counts: vec![(EventKind::Died, 3), (EventKind::Recovered, 3)],
            first_ms: 1_700_000_000_000,
            last_ms: 1_700_000_300_000,
            now: now(),
        };
        let m = render(&story, Language::En, 0);
        assert_eq!(m.title, "outbound: 6 more times since the last message");
        assert_eq!(m.lines[0], "died 3×, ran again 3×, from 2023-11-14 22:13:20 (UTC) to 2023-11-14 22:18:20 (UTC).");
        let zh = render(&story, Language::ZhCn, 480);
        assert_eq!(zh.title, "outbound：自上条消息以来又发生 6 次");
        assert!(zh.lines[0].starts_with("意外停止 3×、恢复运行 3×"), "{}", zh.lines[0]);
    }

    #[test]
    fn an_escalation_says_how_long_nobody_took_it_on_and_who_was_told_first() {
        let story = Story::Escalation {
            event: Event { to: None, ..event(EventKind::Died) },
            now: Now { state: Some(State::Down), server: None, on_it: vec![], ..now() },
            after_ms: 300_000,
            told: vec!["dingtalk robot \"warehouse\" (oapi.dingtalk.com)".into()],
        };
        let m = render(&story, Language::En, 0);
        assert_eq!(m.title, "Nobody on it after 5 min 0 s: outbound died on wh-a");
        assert_eq!(
            m.lines,
            [
                "Told first: dingtalk robot \"warehouse\" (oapi.dingtalk.com); nobody has said they are on it.",
                "Time: 2023-11-14 22:13:20 (UTC)",
                "Now: down",
                "On it: nobody yet (lockwatch ack, or \"I'm on it\" in the tray)"
            ]
        );
        assert!(m.alarm);
        let zh = render(&story, Language::ZhCn, 480);
        assert_eq!(zh.title, "5 分 0 秒内无人处理：outbound 在 wh-a 上意外停止");
        assert!(zh.lines[0].starts_with("已先通知：dingtalk robot"), "{}", zh.lines[0]);
    }

    fn robot(kind: &str, extra: &str) -> Robot {
        let text = format!("[[robot]]\nkind = \"{kind}\"\nurl = \"https://x.example/hook\"\n{extra}\n");
        super::super::robots::parse(&text, |_| None).unwrap().remove(0)
    }

    #[test]
    fn each_kind_gets_its_api_s_shape_and_mentions() {
        let m = render(
            &Story::Incident { event: event(EventKind::Failover), now: now(), seen_by: "s".into() },
            Language::En,
            0,
        );
        let ding =
            payload(&robot("dingtalk", "mention = [\"13800000000\"]\nlanguage = \"en\""), std::slice::from_ref(&m));
        assert_eq!(ding["msgtype"], "markdown");
        assert_eq!(ding["markdown"]["title"], "outbound moved from wh-a to wh-b");
        assert!(ding["markdown"]["text"].as_str().unwrap().ends_with("@13800000000"));
        assert_eq!(ding["at"]["atMobiles"][0], "13800000000");
        let wecom = payload(&robot("wecom", ""), std::slice::from_ref(&m));
        assert_eq!(wecom["msgtype"], "markdown");
        assert!(wecom["markdown"]["content"].as_str().unwrap().starts_with("### "));
        let wecom_at = payload(&robot("wecom", "mention = [\"13800000000\"]"), std::slice::from_ref(&m));
        assert_eq!(
            (wecom_at["msgtype"].as_str(), wecom_at["text"]["mentioned_mobile_list"][0].as_str()),
            (Some("text"), Some("13800000000"))
        );
        let feishu = payload(&robot("feishu", ""), &[m.clone(), m.clone()]);
        assert_eq!(feishu["msg_type"], "interactive");
        assert_eq!(feishu["card"]["header"]["title"]["content"], "lockwatch：2 条事件");
        assert_eq!(feishu["card"]["elements"].as_array().unwrap().len(), 3, "two messages and a rule between");
    }

    #[test]
    fn no_message_links_anything() {
        for kind in KINDS {
            for lang in [Language::En, Language::ZhCn] {
                let m = render(&Story::Incident { event: event(kind), now: now(), seen_by: "s".into() }, lang, 0);
                let text = format!("{} {}", m.title, m.lines.join(" "));
                assert!(!text.contains("http") && !text.contains("]("), "{text}");
            }
        }
    }
}
