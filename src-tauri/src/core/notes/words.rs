//! The words of an event's notification: its title and body in the
//! user's language, from the event's fields (the library's English sentence
//! only where the catalog has none), and its buttons. How urgent it is, is
//! the library's rule ([`EventKind::is_critical`]).

use lockwatch::status::Stall;
use lockwatch::{Event, EventKind};

use super::{Note, NoteAction};
use crate::core::i18n::Tr;

/// Title, body and buttons of an event's notification. The body says what
/// the title does not (a failover's title names both servers already); the
/// library's English sentence only where the catalog has none of its own.
pub fn note(event: &Event, at: &str, tr: &Tr, enabled_by: &[String]) -> Note {
    let node = |r: &Option<lockwatch::status::HolderRef>| r.as_ref().and_then(|h| h.node.clone());
    let (from, to) = (node(&event.from), node(&event.to));
    let id = match event.event {
        EventKind::Died if from.is_some() => "note-died-on",
        EventKind::Died => "note-died",
        EventKind::DataLost => "note-data-lost",
        EventKind::Conflict => "note-conflict",
        EventKind::Failover if from.is_some() && to.is_some() && event.no_standby => "note-failover-alone",
        EventKind::Failover if from.is_some() && to.is_some() => "note-failover",
        EventKind::Failover => "note-failover-unnamed",
        EventKind::Restarted if to.is_some() => "note-restarted-on",
        EventKind::Restarted => "note-restarted",
        EventKind::Stalled => match (event.stall, &from) {
            (Some(Stall::Dying), Some(_)) => "note-stalled-dying",
            (Some(Stall::Hung), Some(_)) => "note-stalled-hung",
            _ => "note-stalled",
        },
        EventKind::Recovered => "note-recovered",
        EventKind::Started => "note-started",
        EventKind::Stopped => "note-stopped",
        EventKind::Unreachable => "note-unreachable",
        EventKind::Reachable => "note-reachable",
        EventKind::StandbyLost => "note-standby-lost",
        EventKind::StandbyBack => "note-standby-back",
    };
    // A failover whose servers are not named is said the general way; a
    // stall by its cause, with its server and time.
    let kind = match (event.event, &to) {
        (EventKind::Failover, None) => "failover_unnamed".to_owned(),
        (EventKind::Stalled, _) if from.is_some() => match (event.stall, event.ms) {
            (Some(Stall::Dying), Some(_)) => "stalled_dying".to_owned(),
            (Some(Stall::Dying), None) => "stalled_dying_never".to_owned(),
            (Some(Stall::Hung), Some(_)) => "stalled_hung".to_owned(),
            _ => "stalled".to_owned(),
        },
        (kind, _) => kind.as_str().to_owned(),
    };
    let server = match event.event {
        EventKind::Died | EventKind::Stalled => from.clone(),
        _ => to.clone(),
    };
    let from = from.unwrap_or_default();
    let to = to.unwrap_or_default();
    let server = server.unwrap_or_default();
    let args = [
        ("job", event.job.as_str().into()),
        ("from", from.as_str().into()),
        ("to", to.as_str().into()),
        ("server", server.as_str().into()),
        ("at", at.into()),
        ("kind", kind.as_str().into()),
        ("reason", event.reason.as_str().into()),
        ("duration", event.ms.map(|ms| tr.duration(ms)).unwrap_or_default().into()),
        ("users", tr.list(&enabled_by.iter().map(String::as_str).collect::<Vec<_>>()).into()),
    ];
    let mut actions = vec![NoteAction::Open, NoteAction::Snooze];
    // Someone can be on trouble, or on a move nobody asked for; good news needs nobody.
    if event.event.is_trouble() || matches!(event.event, EventKind::Failover | EventKind::Restarted) {
        actions.push(NoteAction::OnIt(event.job.clone()));
    }
    Note { summary: tr.ta(id, &args), body: tr.ta("note-body", &args), critical: event.event.is_critical(), actions }
}

#[cfg(test)]
mod tests {
    use lockwatch::status::HolderRef;

    use super::*;
    use crate::core::fixtures::{en, event, zh};
    use crate::core::notes::default_notify_kinds;

    #[test]
    fn a_dying_holder_is_told_with_its_server_and_the_lock_s_time_left_in_both_languages() {
        let node = |n: &str| Some(lockwatch::status::HolderRef { field: "f:1".into(), node: Some(n.into()) });
        let dying = Event {
            from: node("wh-east-1"),
            stall: Some(Stall::Dying),
            ms: Some(8_000),
            ..event(EventKind::Stalled, "outbound")
        };
        let n = note(&dying, "10:02", &en(), &[]);
        assert_eq!(n.summary, "outbound is dying on wh-east-1");
        assert!(n.body.contains("wh-east-1") && n.body.contains("8 s"), "{}", n.body);
        let n = note(&dying, "10:02", &zh(), &[]);
        assert_eq!(n.summary, "outbound 在 wh-east-1 上失去联系");
        assert!(n.body.contains("wh-east-1") && n.body.contains("8 秒"), "the same facts in Chinese: {}", n.body);
        let hung = Event { stall: Some(Stall::Hung), ms: Some(12_000), ..dying.clone() };
        assert_eq!(note(&hung, "10:02", &en(), &[]).summary, "outbound is stuck on wh-east-1");
        assert!(note(&hung, "10:02", &zh(), &[]).body.contains("12 秒"));
    }

    #[test]
    fn a_lost_standby_is_told_with_both_servers_in_both_languages() {
        let node = |n: &str| Some(lockwatch::status::HolderRef { field: String::new(), node: Some(n.into()) });
        let lost = Event { from: node("srv-a"), to: node("srv-b"), ..event(EventKind::StandbyLost, "outbound") };
        let n = note(&lost, "10:02", &en(), &[]);
        assert_eq!(n.summary, "outbound has no backup server left");
        assert_eq!(n.body, "10:02: the backup server srv-b is silent; if srv-a stops, no server takes the job over.");
        let n = note(&lost, "10:02", &zh(), &[]);
        assert!(n.body.contains("srv-b") && n.body.contains("srv-a") && !n.body.contains("silent"), "{}", n.body);
        // Not an incident of its own: an "on it" for it must not quiet a death that follows.
        assert!(!n.actions.contains(&NoteAction::OnIt("outbound".into())));
        let back = Event { from: node("srv-a"), to: node("srv-b"), ..event(EventKind::StandbyBack, "outbound") };
        assert_eq!(note(&back, "10:05", &zh(), &[]).body, "10:05：srv-b 已恢复，可以接管此任务。");
    }

    #[test]
    fn a_restart_names_the_server_and_data_lost_is_critical() {
        let mut e = event(EventKind::Restarted, "outbound");
        e.to = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        assert_eq!(note(&e, "10:02", &en(), &[]).summary, "outbound restarted on wh-east-1");
        let lost = note(&event(EventKind::DataLost, "outbound"), "10:02", &en(), &[]);
        assert_eq!(lost.summary, "Redis lost the data of outbound");
        assert!(lost.critical);
        assert!(default_notify_kinds().contains(&EventKind::Restarted));
        assert!(default_notify_kinds().contains(&EventKind::DataLost));
    }

    #[test]
    fn every_kind_has_its_own_plain_sentence_in_both_languages_not_the_engineers() {
        let node = |n: &str| Some(HolderRef { field: "f:1".into(), node: Some(n.into()) });
        for kind in EventKind::ALL {
            let e = Event {
                from: node("wh-a"),
                to: node("wh-b"),
                reason: "the lock field u:1 lease".into(),
                ..event(kind, "outbound")
            };
            for words in [en(), zh()] {
                let body = note(&e, "10:02", &words, &["alice".into()]).body;
                assert!(!body.contains("lease") && !body.contains("field"), "{kind:?}: {body}");
            }
        }
    }

    #[test]
    fn died_and_conflict_are_critical_failover_names_both_servers() {
        assert!(note(&event(EventKind::Died, "outbound"), "10:02", &en(), &[]).critical);
        assert!(note(&event(EventKind::Conflict, "outbound"), "10:02", &en(), &[]).critical);
        let mut e = event(EventKind::Failover, "outbound");
        e.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        let n = note(&e, "10:02:03", &en(), &[]);
        assert_eq!(n.summary, "outbound moved from wh-east-1 to wh-west-1");
        assert!(!n.critical);
        // One message for a move that used up the last standby.
        e.no_standby = true;
        assert_eq!(
            note(&e, "10:02:03", &en(), &[]).summary,
            "outbound moved from wh-east-1 to wh-west-1; no other server is left to take it over"
        );
        assert_eq!(
            note(&e, "10:02:03", &zh(), &[]).summary,
            "outbound 已从 wh-east-1 切换到 wh-west-1，已没有其他服务器可以接管"
        );
    }

    #[test]
    fn a_failover_is_said_once_and_a_death_names_the_server_that_died() {
        let mut e = event(EventKind::Failover, "outbound");
        e.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        // The library's reason repeats the title: "the job moved from wh-east-1 to wh-west-1".
        e.reason = "the job moved from wh-east-1 to wh-west-1".into();
        let n = note(&e, "10:02:03", &en(), &[]);
        assert_eq!(n.body, "10:02:03: wh-west-1 runs it now.");
        assert!(!n.body.contains("moved"), "{}", n.body);
        let mut died = event(EventKind::Died, "outbound");
        died.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        assert_eq!(note(&died, "10:02:03", &en(), &[]).summary, "outbound died on wh-east-1");
        assert_eq!(note(&died, "10:02:03", &zh(), &[]).summary, "outbound 在 wh-east-1 上意外停止");
    }

    #[test]
    fn notifications_offer_the_dashboard_a_snooze_and_on_it_for_trouble() {
        let mut e = event(EventKind::Failover, "outbound");
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        let n = note(&e, "10:02", &en(), &[]);
        assert_eq!(n.actions, [NoteAction::Open, NoteAction::Snooze, NoteAction::OnIt("outbound".into())]);
        let labels: Vec<String> = n.actions.iter().map(|a| a.label(&en())).collect();
        assert_eq!(labels, ["Open dashboard", "Mute 1 h", "I'm on it"]);
        let labels: Vec<String> = n.actions.iter().map(|a| a.label(&zh())).collect();
        assert_eq!(labels, ["打开监控面板", "静音 1 小时", "我来处理"]);
        assert!(
            !note(&event(EventKind::Recovered, "o"), "", &en(), &[]).actions.contains(&NoteAction::OnIt("o".into()))
        );
        for a in [NoteAction::Open, NoteAction::Snooze, NoteAction::OnIt("in:bound".into())] {
            assert_eq!(NoteAction::parse(&a.id()), Some(a));
        }
        assert_eq!(NoteAction::parse("default"), Some(NoteAction::Open), "a click on the note opens the dashboard");
        assert_eq!(NoteAction::parse("__closed"), None);
        assert_eq!(NoteAction::parse("on-it:"), None);
    }

    #[test]
    fn a_chinese_failover_notification_names_both_servers_and_says_who_runs_it_now() {
        let mut e = event(EventKind::Failover, "outbound");
        e.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        let n = note(&e, "10:02:03", &zh(), &[]);
        assert_eq!(n.summary, "outbound 已从 wh-east-1 切换到 wh-west-1");
        assert_eq!(n.body, "10:02:03：现在由 wh-west-1 运行。");
        let died =
            note(&event(EventKind::Died, "outbound"), "10:02:03", &zh(), &["alice".to_owned(), "bob".to_owned()]);
        assert_eq!(died.summary, "outbound 意外停止");
        assert_eq!(
            died.body, "10:02:03：alice、bob 已启用此任务，但没有服务器在运行。",
            "who has it on, as in English"
        );
        assert!(died.critical);
        assert_eq!(
            note(&event(EventKind::Unreachable, "o"), "10:02:03", &zh(), &[]).summary,
            "无法连接 Redis：任务状态未知"
        );
        let mut unnamed = event(EventKind::Failover, "outbound");
        unnamed.to = Some(HolderRef { field: "b:1".into(), node: None });
        let n = note(&unnamed, "10:02:03", &zh(), &[]);
        assert_eq!(
            (n.summary.as_str(), n.body.as_str()),
            ("outbound 已切换到另一台服务器", "10:02:03：现在由另一台服务器运行。")
        );
    }
}
