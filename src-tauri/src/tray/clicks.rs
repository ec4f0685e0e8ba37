//! What a click in the tray's menu does. Clicks arrive on the main thread;
//! whatever waits on Redis, the keyring or the disk runs on the async
//! runtime instead.

use tauri::AppHandle;
use tauri::menu::MenuEvent;

use super::menu_id::MenuId;
use super::{start_at_login, webview_runtime};
use crate::core::actions::{self, Effect};
use crate::core::desk::Desk;
use crate::core::runtime;
use crate::link::View;

/// Does what the menu item clicked in `event` is for.
pub fn on_menu(app: &AppHandle, desk: &Desk, event: &MenuEvent) {
    let Some(id) = MenuId::parse(event.id().as_ref()) else { return };
    match id {
        MenuId::Open => desk.open(View::default()),
        MenuId::Settings => desk.open(View::Settings),
        MenuId::Quit => app.exit(0),
        MenuId::Autostart => {
            let app = app.clone();
            off_main(desk, move |desk| toggle_autostart(&app, desk));
        }
        MenuId::Mute(how) => off_main(desk, move |desk| actions::mute(desk, how)),
        MenuId::Flip(job) => off_main(desk, move |desk| toggle_flag(desk, &job)),
        MenuId::Ack(job) => off_main(desk, move |desk| toggle_ack(desk, &job)),
        // The status and a refused flip's short line lead to the details.
        MenuId::Status(_) | MenuId::Error(_) => desk.open(View::default()),
        MenuId::Others(_)
        | MenuId::Standby(_)
        | MenuId::OnIt { .. }
        | MenuId::Confirm(_)
        | MenuId::MuteMenu
        | MenuId::Folded(_) => {}
    }
}

fn off_main(desk: &Desk, action: impl FnOnce(&Desk) + Send + 'static) {
    let desk = desk.clone();
    runtime::spawn(async move { action(&desk) });
}

/// Turns start at login on or off, the opposite of what it was
/// ([`start_at_login`]). When it cannot be written or removed, the setting
/// stays as it was (the menu's checkbox shows the truth) and the reason is
/// logged. While the computer starts the app for everyone, the item is
/// greyed and this does nothing.
fn toggle_autostart(app: &AppHandle, desk: &Desk) {
    if start_at_login::for_this_computer() {
        return;
    }
    let want = !desk.state().lock().settings.autostart;
    let done = match start_at_login::set(app, want) {
        Ok(()) => want,
        Err(err) => {
            tracing::warn!("cannot change start at login: {err}");
            !want
        }
    };
    actions::update_settings(desk, |s| {
        s.autostart = done;
        Effect::Redraw
    });
}

/// A click on a job's "Enabled for me": asks for the opposite of the
/// server's truth as last read. (The checkbox itself is no witness: a redraw
/// may have reset it between the click and this.) While that truth is
/// unknown, the click is undone by a redraw.
///
/// The last one with the job on is asked why first, in a small window of
/// its own (the dashboard's process, [`View::SwitchOff`]); the flip happens
/// when they answer there. Where that window cannot open (Windows without
/// WebView2), a native yes/no box asks, and no reason is kept.
fn toggle_flag(desk: &Desk, job: &str) {
    match wish(desk, job) {
        Some((false, true)) => {
            desk.redraw();
            if webview_runtime::missing().is_some() {
                ask_natively(desk, job);
            } else {
                desk.open(View::SwitchOff { job: job.to_owned() });
            }
        }
        Some((on, _)) => {
            let desk = desk.clone();
            let job = job.to_owned();
            runtime::spawn(async move {
                let _ = actions::flip(&desk, &job, on, None).await;
            });
        }
        None => desk.redraw(),
    }
}

/// Asks the last one on, in a native box, whether to switch `job` off; a
/// yes flips it.
fn ask_natively(desk: &Desk, job: &str) {
    let tr = desk.state().lock().tr();
    let title = tr.ta("dialog-off-title", &[("job", job.into())]);
    let text = tr.ta("dialog-off-native", &[("job", job.into())]);
    let (desk, job) = (desk.clone(), job.to_owned());
    let asked = std::thread::Builder::new().name("switch-off".into()).spawn(move || {
        if webview_runtime::ask(&title, &text) {
            runtime::spawn(async move {
                let _ = actions::flip(&desk, &job, false, None).await;
            });
        }
    });
    if let Err(err) = asked {
        tracing::warn!(error = %err, "cannot ask whether to switch the job off");
    }
}

/// The flag a click asks for, and whether the user is the last one with
/// the job on (the library's rules on the status as last read).
fn wish(desk: &Desk, job: &str) -> Option<(bool, bool)> {
    let inner = desk.state().lock();
    let user = &inner.effective.as_ref()?.user;
    let status = inner.job(job)?.known.status.as_ref()?;
    let on = status.own_flag(user).map(|on| !on)?;
    Some((on, status.last_one_on(user)))
}

/// A click on a job's "I'm on it" / "I'm no longer on it": asks for the
/// opposite of the user's acknowledgement as last read (for an hour, no
/// note, from the menu). While it is not known, the click only redraws.
fn toggle_ack(desk: &Desk, job: &str) {
    let own = {
        let inner = desk.state().lock();
        let user = inner.user();
        inner.job(job).and_then(|j| j.known.status.as_ref()).and_then(|s| s.own_ack(&user))
    };
    match own {
        Some(acked) => {
            let desk = desk.clone();
            let job = job.to_owned();
            runtime::spawn(async move {
                let _ = actions::set_on_it(&desk, &job, !acked).await;
            });
        }
        None => desk.redraw(),
    }
}
