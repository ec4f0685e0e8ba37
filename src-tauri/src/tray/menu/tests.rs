//! The tray's view, in both languages, from statuses made by hand.

use lockwatch::State;
use lockwatch::snapshot::Ack;
use lockwatch::status::NodeView;

use super::*;
use crate::core::fixtures::{ack, known, utc};
use crate::core::i18n::{Lang, tr};
use crate::core::refusal::Refusal;
use crate::core::state::{JobState, OwnFlip};

fn words(lang: Lang) -> Words<'static> {
    Words { tr: tr(lang), time_of_day: &utc }
}

fn en() -> Words<'static> {
    words(Lang::En)
}

fn zh() -> Words<'static> {
    words(Lang::ZhHans)
}

#[test]
fn a_lost_standby_stays_in_the_menu_in_both_languages() {
    let mut v = known(State::Running, Some("srv-a"), &["alice"]);
    if let Some(s) = v.status.as_mut() {
        s.no_standby = Some("no standby: srv-b (heartbeat 11 s old) silent; …".into());
        s.nodes = vec![NodeView {
            node: "srv-b".into(),
            state: Some("idle".into()),
            host: None,
            heartbeat_age_ms: Some(11_000),
            fence: None,
            fresh: false,
        }];
    }
    let line = |w: &Words| tray_view(std::slice::from_ref(&v), "alice", None, 0, w).jobs[0].standby_line.clone();
    assert_eq!(line(&en()).as_deref(), Some("⚠ No backup server: srv-b is silent"));
    assert_eq!(line(&zh()).as_deref(), Some("⚠ 没有备用服务器：srv-b 已无响应"));
    assert_eq!(
        tray_view(&[known(State::Running, Some("srv-a"), &[])], "alice", None, 0, &en()).jobs[0].standby_line,
        None
    );
}

#[test]
fn a_lost_switch_says_whose_where_the_others_line_would_say_nobody() {
    let mut v = known(State::Running, Some("srv-a"), &[]);
    let line =
        |v: &JobState, w: &Words| tray_view(std::slice::from_ref(v), "bob", None, 0, w).jobs[0].others_line.clone();
    assert_eq!(line(&v, &en()), "Nobody else has it enabled");
    if let Some(s) = v.status.as_mut() {
        s.flags_lost = vec!["alice".into()];
    }
    assert_eq!(
        line(&v, &en()),
        "⚠ Redis lost alice's switch (it was on): it still counts as on until it is switched on or off again"
    );
    assert_eq!(line(&v, &zh()), "⚠ Redis 丢失了 alice 的启用设置（原为启用）：在重新启用或停用之前，仍按启用处理");
}

#[test]
fn the_icon_is_the_worst_state_and_unknown_before_any_read() {
    let jobs = [known(State::Running, Some("a"), &[]), known(State::Stale, Some("b"), &[])];
    assert_eq!(tray_view(&jobs, "alice", None, 0, &en()).icon, State::Stale);
    let jobs = [known(State::Running, Some("a"), &[]), known(State::Conflict, Some("b"), &[])];
    assert_eq!(tray_view(&jobs, "alice", None, 0, &en()).icon, State::Conflict);
    let jobs = [known(State::Running, Some("a"), &[]), JobState { job: "x".into(), ..Default::default() }];
    assert_eq!(tray_view(&jobs, "alice", None, 0, &en()).icon, State::Unknown);
}

#[test]
fn jobs_in_trouble_come_first_and_past_three_jobs_the_others_are_one_click_away() {
    let named = |job: &str, state: State| JobState { job: job.into(), ..known(state, Some("a"), &["alice"]) };
    let few = [named("outbound", State::Running), named("inbound", State::Down)];
    let v = tray_view(&few, "alice", None, 0, &en());
    let order: Vec<(&str, Option<&str>)> = v.jobs.iter().map(|j| (j.job.as_str(), j.folded.as_deref())).collect();
    assert_eq!(order, [("inbound", None), ("outbound", None)], "a few jobs: all whole, trouble first");
    let many = [
        named("outbound", State::Running),
        named("inbound", State::Stale),
        named("stock", State::Stopped),
        named("labels", State::Conflict),
        named("erp", State::Pending),
    ];
    let v = tray_view(&many, "alice", None, 0, &en());
    let order: Vec<(&str, Option<&str>)> = v.jobs.iter().map(|j| (j.job.as_str(), j.folded.as_deref())).collect();
    assert_eq!(
        order,
        [
            ("labels", None),
            ("inbound", None),
            ("outbound", Some("outbound: running")),
            ("stock", Some("stock: stopped")),
            ("erp", Some("erp: pending")),
        ]
    );
    assert_eq!(v.icon, State::Conflict);
}

#[test]
fn the_tooltip_names_each_jobs_holder_and_fits_a_windows_tray() {
    let v = tray_view(&[known(State::Running, Some("wh-east-1"), &["alice"])], "alice", None, 1_000_000, &en());
    assert_eq!(v.tooltip(), v.jobs[0].status_line);
    assert!(v.tooltip().contains("wh-east-1"), "{}", v.tooltip());
    assert_eq!(tray_view(&[], "alice", None, 0, &en()).tooltip(), "lockwatch");
    let many: Vec<JobState> = (0..9).map(|_| known(State::Running, Some("服务器-东区-一号"), &["alice"])).collect();
    let long = tray_view(&many, "alice", None, 1_000_000, &zh()).tooltip();
    assert_eq!(long.chars().count(), 127, "{long}");
    assert!(long.ends_with('…'));
}

#[test]
fn the_menu_says_state_server_age_and_since() {
    let v = tray_view(&[known(State::Running, Some("wh-east-1"), &["alice", "bob"])], "alice", None, 1_000_000, &en());
    let m = &v.jobs[0];
    assert_eq!(m.status_line, "outbound: running on wh-east-1 · since 00:04");
    // A late heartbeat is a fact: its age, in whole seconds.
    let mut stale = known(State::Stale, Some("wh-east-1"), &["alice"]);
    if let Some(h) = stale.status.as_mut().and_then(|s| s.holder.as_mut()) {
        h.heartbeat_age_ms = Some(12_345);
    }
    let v = tray_view(&[stale], "alice", None, 1_000_000, &en());
    assert_eq!(v.jobs[0].status_line, "outbound: not responding on wh-east-1 · since 00:04 · last heard from 12 s ago");
    assert_eq!(m.enabled_for_me, Some(true));
    assert!(m.can_flip);
    assert_eq!(m.flip_label, "Enabled for me");
    assert_eq!(m.others_line, "Also enabled by: bob");
}

#[test]
fn unknown_never_offers_a_flip_or_claims_who_enabled_it() {
    let mut unreadable = known(State::Unknown, None, &[]);
    if let Some(s) = unreadable.status.as_mut() {
        s.checked_at_ms = None;
    }
    let v = tray_view(&[unreadable], "alice", None, 0, &en());
    let m = &v.jobs[0];
    assert!(!m.can_flip);
    assert_eq!(m.enabled_for_me, None, "not known, not unchecked");
    assert_eq!(m.flip_label, "Enabled for me: not known (Redis unreadable)");
    assert!(m.status_line.contains("unknown (Redis unreadable)"));
    assert!(m.others_line.contains("not known"));
}

#[test]
fn after_redis_lost_the_data_the_own_flag_is_known_and_can_be_set_again() {
    let mut lost = known(State::Unknown, None, &[]);
    if let Some(s) = lost.status.as_mut() {
        s.reason = "Redis lost the job's data (the fence counter was at 57 and is gone); flags …".into();
    }
    let v = tray_view(&[lost], "alice", None, 0, &en());
    let m = &v.jobs[0];
    assert!(m.can_flip, "a supervisor must be able to enable it again");
    assert_eq!(m.enabled_for_me, Some(false));
    assert_eq!(m.status_line, "outbound: unknown (Redis lost the job's data) · since 00:04");
}

#[test]
fn pending_says_how_soon_a_server_should_take_it() {
    let mut pending = known(State::Pending, None, &["alice"]);
    if let Some(s) = pending.status.as_mut() {
        s.since_ms = Some(1_000_000 - 2_000);
        s.pending_until_ms = Some(1_000_000 + 3_000);
    }
    let v = tray_view(&[pending, known(State::Running, Some("a"), &[])], "alice", None, 0, &en());
    assert_eq!(v.icon, State::Pending, "amber beats green");
    assert_eq!(v.jobs[0].status_line, "outbound: pending · a server should take it within 3 s · since 00:16");
}

#[test]
fn mute_label_shows_until_when_and_the_time_left() {
    assert_eq!(mute_label(Some(3_600_000), 0, &en()), "Notifications muted until 01:00");
    assert_eq!(unmute_label(Some(3_600_000), 0, &en().tr).as_deref(), Some("Unmute (1 h 0 min left)"));
    assert_eq!(mute_label(Some(10), 20, &en()), "Mute notifications");
}

#[test]
fn unmute_is_offered_only_while_muted() {
    let jobs = [known(State::Running, Some("a"), &[])];
    for words in [en(), zh()] {
        assert_eq!(tray_view(&jobs, "alice", None, 0, &words).unmute_label, None, "never muted");
        assert_eq!(tray_view(&jobs, "alice", Some(10), 20, &words).unmute_label, None, "the mute ran out");
        assert!(tray_view(&jobs, "alice", Some(30), 20, &words).unmute_label.is_some());
    }
}

#[test]
fn the_menu_speaks_chinese_from_the_statuses_fields() {
    let v = tray_view(&[known(State::Running, Some("wh-east-1"), &["alice", "bob", "carol"])], "alice", None, 0, &zh());
    let m = &v.jobs[0];
    assert_eq!(m.status_line, "outbound：运行中 · wh-east-1 · 00:04 起");
    assert_eq!(m.flip_label, "由我启用");
    assert_eq!(m.others_line, "其他启用人：bob、carol");
    assert_eq!(v.labels.open, "打开监控面板");
    assert_eq!(v.labels.quit, "退出 lockwatch");
    let mut pending = known(State::Pending, None, &["alice"]);
    if let Some(s) = pending.status.as_mut() {
        s.since_ms = Some(1_000_000 - 2_000);
        s.pending_until_ms = Some(1_000_000 + 3_000);
    }
    let v = tray_view(&[pending], "alice", None, 0, &zh());
    assert_eq!(v.jobs[0].status_line, "outbound：等待启动 · 应在 3 秒内由服务器启动 · 00:16 起");
    let v = tray_view(&[known(State::Stopped, None, &[])], "alice", None, 0, &zh());
    assert_eq!(v.jobs[0].status_line, "outbound：已停止 · 00:04 起");
    assert_eq!(v.jobs[0].others_line, "没有其他人启用");
    let connecting = JobState { job: "outbound".into(), ..Default::default() };
    let v = tray_view(&[connecting], "alice", None, 0, &zh());
    assert_eq!(v.jobs[0].status_line, "outbound：正在连接…");
    assert_eq!(v.jobs[0].flip_label, "由我启用：未知（无法读取 Redis）");
}

#[test]
fn every_state_has_its_own_word_in_both_languages() {
    use State::*;
    let all = [Running, Stale, Down, Pending, Stopped, Conflict, Unknown];
    for lang in Lang::ALL {
        let t = tr(lang);
        let mut said: Vec<String> = all.iter().map(|s| state_word(&t, *s)).collect();
        said.sort();
        said.dedup();
        assert_eq!(said.len(), all.len(), "{lang:?}: {said:?}");
    }
    let zh_words: Vec<String> = all.iter().map(|s| state_word(&tr(Lang::ZhHans), *s)).collect();
    assert_eq!(zh_words, ["运行中", "无响应", "已中断", "等待启动", "已停止", "冲突", "未知"]);
}

#[test]
fn a_refused_flip_is_one_short_line_with_the_details_left_to_the_dashboard() {
    // The library's refusal names the ACL rule, the key and what to do: ~300 characters.
    let refusal = "Redis refused to write {outbound}:enabled:bob as user bob (NOPERM: this user has no permissions to access one of the keys used as arguments): the ACL user may write only its own flag; ask the Redis admin to run the rules `lockwatch acl --user bob` prints, or sign in as the user whose flag this is";
    assert!(refusal.chars().count() > 280);
    for lang in Lang::ALL {
        let mut refused = known(State::Running, Some("a"), &["bob"]);
        refused.flip_error = Some(Refusal { said: "x".into(), detail: refusal.into() });
        let line = tray_view(&[refused], "bob", None, 0, &words(lang)).jobs[0].error_line.clone().unwrap();
        assert!(line.chars().count() <= 60, "{lang:?}: {line}");
        assert!(line.starts_with('⚠'), "{line}");
    }
}

#[test]
fn the_mute_title_shows_the_time_left_in_both_languages() {
    let jobs = [known(State::Running, Some("a"), &[])];
    let v = tray_view(&jobs, "alice", Some(3_000_000), 0, &zh());
    assert_eq!(
        (v.mute_label.as_str(), v.unmute_label.as_deref()),
        ("通知已静音至 00:50", Some("恢复通知（还剩 50 分 0 秒）"))
    );
    let v = tray_view(&jobs, "alice", Some(3_000_000), 2_999_000, &en());
    assert_eq!(
        (v.mute_label.as_str(), v.unmute_label.as_deref()),
        ("Notifications muted until 00:50", Some("Unmute (1 s left)"))
    );
    let v = tray_view(&jobs, "alice", Some(3_000_000), 3_000_000, &zh());
    assert_eq!((v.mute_label.as_str(), v.unmute_label.as_deref()), ("通知静音", None));
}

#[test]
fn the_menu_says_who_is_on_it_and_offers_the_own_ack_in_both_languages() {
    let mut v = known(State::Down, None, &["alice"]);
    if let Some(s) = v.status.as_mut() {
        s.acks = vec![ack("alice", 36_120_000, "looking at wh-a"), ack("bob", 36_180_000, "")];
    }
    let m = &tray_view(std::slice::from_ref(&v), "carol", None, 0, &en()).jobs[0];
    assert_eq!(m.on_it_lines, ["alice has been on it since 10:02: looking at wh-a", "bob has been on it since 10:03"]);
    assert_eq!((m.own_ack, m.ack_label.as_str()), (Some(false), "I'm on it"));
    let m = &tray_view(std::slice::from_ref(&v), "alice", None, 0, &en()).jobs[0];
    assert_eq!((m.own_ack, m.ack_label.as_str()), (Some(true), "I'm no longer on it"));
    assert_eq!(m.on_it_lines, ["You have been on it since 10:02: looking at wh-a", "bob has been on it since 10:03"]);
    let m = &tray_view(std::slice::from_ref(&v), "carol", None, 0, &zh()).jobs[0];
    assert_eq!(m.on_it_lines[0], "alice 自 10:02 起正在处理：looking at wh-a");
    let m = &tray_view(std::slice::from_ref(&v), "alice", None, 0, &zh()).jobs[0];
    assert_eq!(m.on_it_lines, ["您自 10:02 起正在处理：looking at wh-a", "bob 自 10:03 起正在处理"]);
    assert_eq!(m.ack_label, "我不再处理");
    let m = &tray_view(std::slice::from_ref(&v), "bob", None, 0, &en()).jobs[0];
    assert_eq!(m.on_it_lines[1], "You have been on it since 10:03", "her own, without a note");
    let mut unreadable = v.clone();
    if let Some(s) = unreadable.status.as_mut() {
        s.checked_at_ms = None;
    }
    let m = &tray_view(&[unreadable], "alice", None, 0, &en()).jobs[0];
    assert_eq!(m.own_ack, None, "not offered while not known");
}

#[test]
fn i_m_on_it_is_offered_for_trouble_and_to_take_one_s_own_back_not_while_the_job_is_fine() {
    let offered = |state: State, acks: Vec<Ack>| {
        let mut v = known(state, None, &["alice"]);
        if let Some(s) = v.status.as_mut() {
            s.acks = acks;
        }
        tray_view(std::slice::from_ref(&v), "alice", None, 0, &en()).jobs[0].ack_offered
    };
    for state in [State::Stale, State::Down, State::Conflict, State::Unknown] {
        assert!(offered(state, vec![]), "{state:?}");
    }
    for state in [State::Running, State::Pending, State::Stopped] {
        assert!(!offered(state, vec![]), "{state:?}");
    }
    assert!(offered(State::Running, vec![ack("alice", 36_120_000, "")]), "her own can be taken back");
    assert!(!offered(State::Running, vec![ack("bob", 36_120_000, "")]));
}

#[test]
fn the_own_flip_is_confirmed_in_the_menu() {
    let mut v = known(State::Stopped, None, &[]);
    v.own_flip = Some(OwnFlip { on: false, at_ms: 36_120_000 });
    let m = &tray_view(std::slice::from_ref(&v), "alice", None, 0, &en()).jobs[0];
    assert_eq!(m.confirm_line.as_deref(), Some("✓ You switched it off at 10:02"));
    let m = &tray_view(std::slice::from_ref(&v), "alice", None, 0, &zh()).jobs[0];
    assert_eq!(m.confirm_line.as_deref(), Some("✓ 您已于 10:02 停用"));
}
