//! The tray icon and its menu, drawn from a [`TrayView`]. Texts and
//! checkboxes are updated in place; the menu is rebuilt only when its shape
//! changes (jobs added or removed, an error or confirmation line appearing, someone saying
//! they are on it or no longer), because a
//! rebuild renumbers every item for the desktop's tray host.

use lockwatch::State;
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::TrayIcon;
use tauri::{AppHandle, Manager, Wry};

use crate::clock::{desktop_now_ms, time_of_day};
use crate::menu_id::{MenuId, Mute};
use crate::model::{Labels, TrayView, Words, tray_view};
use crate::state::AppState;

pub const TRAY_ID: &str = "lockwatch";

/// The icon of a state (PNGs rendered from `icons/*.svg`).
pub fn icon(state: State) -> &'static [u8] {
    match state {
        State::Running => include_bytes!("../../icons/state-running.png"),
        State::Stale => include_bytes!("../../icons/state-stale.png"),
        State::Down => include_bytes!("../../icons/state-down.png"),
        State::Pending => include_bytes!("../../icons/state-pending.png"),
        State::Stopped => include_bytes!("../../icons/state-stopped.png"),
        State::Conflict => include_bytes!("../../icons/state-conflict.png"),
        State::Unknown => include_bytes!("../../icons/state-unknown.png"),
    }
}

/// Redraws the tray from the app state (never on the main thread; see [`AppState`]).
pub fn redraw(app: &AppHandle) {
    let Some(tray) = app.tray_by_id(TRAY_ID) else { return };
    let state = app.state::<AppState>();
    let (view, autostart) = {
        let inner = state.lock();
        let user = inner.effective.as_ref().map(|e| e.user.clone()).unwrap_or_default();
        let words = Words { tr: inner.tr(), time_of_day: &time_of_day };
        let mut view = tray_view(&inner.jobs, &user, inner.settings.mute_until_ms, desktop_now_ms(), &words);
        if let Some(err) = &inner.settings_error {
            view.jobs.clear();
            view.mute_label = words.tr.ta("menu-settings-problem", &[("error", err.as_str().into())]);
        }
        (view, inner.settings.autostart)
    };
    let mut menu = state.tray();
    if let Err(err) = render(app, &tray, &mut menu, &view, autostart) {
        tracing::warn!(error = %err, "cannot update the tray");
    }
}

/// What decides the menu's items: per job its name, whether it has an
/// error line, a confirmation line, and how many "on it" lines; the fixed
/// labels; the mute submenu's title.
type Shape = (Vec<(String, bool, bool, usize)>, Labels, String);

/// The menu as built, to update it in place.
pub struct TrayMenu {
    shape: Shape,
    jobs: Vec<JobItems>,
    unmute: MenuItem<Wry>,
    autostart: CheckMenuItem<Wry>,
    icon: State,
}

struct JobItems {
    status: MenuItem<Wry>,
    flip: CheckMenuItem<Wry>,
    others: MenuItem<Wry>,
    on_it: Vec<MenuItem<Wry>>,
    ack: MenuItem<Wry>,
    confirm: Option<MenuItem<Wry>>,
    error: Option<MenuItem<Wry>>,
}

/// Brings the tray up to date with `view`.
///
/// # Errors
/// Tauri's, when the menu cannot be built or changed.
pub fn render(
    app: &AppHandle,
    tray: &TrayIcon,
    current: &mut Option<TrayMenu>,
    view: &TrayView,
    autostart: bool,
) -> tauri::Result<()> {
    // A new language changes every fixed label, and a submenu's title does
    // not follow set_text over the tray host's D-Bus menu: both rebuild.
    let shape = (
        view.jobs
            .iter()
            .map(|j| (j.job.clone(), j.error_line.is_some(), j.confirm_line.is_some(), j.on_it_lines.len()))
            .collect(),
        view.labels.clone(),
        view.mute_label.clone(),
    );
    let rebuild = current.as_ref().is_none_or(|m| m.shape != shape);
    if rebuild {
        let menu = Menu::new(app)?;
        let mut jobs = Vec::new();
        for j in &view.jobs {
            // Enabled (a disabled item is drawn grey, and this is the line that matters); it opens the dashboard.
            let status = MenuItem::with_id(app, MenuId::Status(j.job.clone()), &j.status_line, true, None::<&str>)?;
            let flip = CheckMenuItem::with_id(
                app,
                MenuId::Flip(j.job.clone()),
                &j.flip_label,
                j.can_flip,
                j.enabled_for_me.unwrap_or(false),
                None::<&str>,
            )?;
            let others = MenuItem::with_id(app, MenuId::Others(j.job.clone()), &j.others_line, false, None::<&str>)?;
            menu.append(&status)?;
            menu.append(&flip)?;
            menu.append(&others)?;
            let mut on_it = Vec::new();
            for (line, user) in j.on_it_lines.iter().zip(&j.on_it_users) {
                let id = MenuId::OnIt { job: j.job.clone(), user: user.clone() };
                let item = MenuItem::with_id(app, id, line, false, None::<&str>)?;
                menu.append(&item)?;
                on_it.push(item);
            }
            let ack =
                MenuItem::with_id(app, MenuId::Ack(j.job.clone()), &j.ack_label, j.own_ack.is_some(), None::<&str>)?;
            menu.append(&ack)?;
            let confirm = match &j.confirm_line {
                Some(text) => {
                    let item = MenuItem::with_id(app, MenuId::Confirm(j.job.clone()), text, false, None::<&str>)?;
                    menu.append(&item)?;
                    Some(item)
                }
                None => None,
            };
            let error = match &j.error_line {
                Some(text) => {
                    let item = MenuItem::with_id(app, MenuId::Error(j.job.clone()), text, true, None::<&str>)?;
                    menu.append(&item)?;
                    Some(item)
                }
                None => None,
            };
            menu.append(&PredefinedMenuItem::separator(app)?)?;
            jobs.push(JobItems { status, flip, others, on_it, ack, confirm, error });
        }
        let labels = &view.labels;
        let unmute = MenuItem::with_id(app, MenuId::Mute(Mute::Off), &view.unmute_label, true, None::<&str>)?;
        let mute = Submenu::with_id_and_items(
            app,
            MenuId::MuteMenu,
            &view.mute_label,
            true,
            &[
                &MenuItem::with_id(app, MenuId::Mute(Mute::OneHour), &labels.mute[0], true, None::<&str>)?,
                &MenuItem::with_id(app, MenuId::Mute(Mute::FourHours), &labels.mute[1], true, None::<&str>)?,
                &MenuItem::with_id(app, MenuId::Mute(Mute::UntilTomorrow), &labels.mute[2], true, None::<&str>)?,
                &unmute,
            ],
        )?;
        let autostart_item =
            CheckMenuItem::with_id(app, MenuId::Autostart, &labels.autostart, true, autostart, None::<&str>)?;
        menu.append(&MenuItem::with_id(app, MenuId::Open, &labels.open, true, None::<&str>)?)?;
        menu.append(&mute)?;
        menu.append(&MenuItem::with_id(app, MenuId::Settings, &labels.settings, true, None::<&str>)?)?;
        menu.append(&autostart_item)?;
        menu.append(&PredefinedMenuItem::separator(app)?)?;
        menu.append(&MenuItem::with_id(app, MenuId::Quit, &labels.quit, true, None::<&str>)?)?;
        tray.set_menu(Some(menu))?;
        tray.set_icon(Some(Image::from_bytes(icon(view.icon))?))?;
        *current = Some(TrayMenu { shape, jobs, unmute, autostart: autostart_item, icon: view.icon });
        return Ok(());
    }
    let Some(m) = current.as_mut() else { return Ok(()) };
    for (items, j) in m.jobs.iter().zip(&view.jobs) {
        items.status.set_text(&j.status_line)?;
        // A checkbox has no "not known": it is left unchecked, disabled, and its label says so.
        items.flip.set_text(&j.flip_label)?;
        items.flip.set_checked(j.enabled_for_me.unwrap_or(false))?;
        items.flip.set_enabled(j.can_flip)?;
        items.others.set_text(&j.others_line)?;
        for (item, line) in items.on_it.iter().zip(&j.on_it_lines) {
            item.set_text(line)?;
        }
        items.ack.set_text(&j.ack_label)?;
        items.ack.set_enabled(j.own_ack.is_some())?;
        if let (Some(item), Some(text)) = (&items.confirm, &j.confirm_line) {
            item.set_text(text)?;
        }
        if let (Some(item), Some(text)) = (&items.error, &j.error_line) {
            item.set_text(text)?;
        }
    }
    m.unmute.set_text(&view.unmute_label)?;
    m.autostart.set_checked(autostart)?;
    if m.icon != view.icon {
        tray.set_icon(Some(Image::from_bytes(icon(view.icon))?))?;
        m.icon = view.icon;
    }
    Ok(())
}
