//! The tray icon and its menu (Tauri's tray and menu), drawn from a
//! [`TrayView`]. Texts and checkboxes are updated in place; the menu is
//! rebuilt only when its shape changes (jobs added or removed, an error or
//! confirmation line appearing, someone saying they are on it or no
//! longer), because a rebuild renumbers every item for the desktop's tray
//! host.
//!
//! The icon and menu belong to the main thread; [`redraw`] works out the
//! view wherever it is called and hands it to the main thread, in order,
//! to draw.

use std::cell::RefCell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lockwatch::State;
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, IsMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem, Submenu};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Wry};

use super::menu::{Labels, TrayView, Words, tray_view};
use super::menu_id::MenuId;
use crate::core::actions::Mute;
use crate::core::clock::{desktop_now_ms, time_of_day};
use crate::core::desk::Desk;

thread_local! {
    /// The icon and its menu as built, on the main thread.
    static TRAY: RefCell<Option<Drawn>> = const { RefCell::new(None) };
}

/// Serializes working out views and handing them over, so the main thread
/// draws them in the order the state had them.
static HANDOVER: Mutex<()> = Mutex::new(());

/// The last view handed over: the main thread draws only that one of those
/// still waiting (many jobs' statuses come in bursts, and a folded job's
/// new state rebuilds the whole menu).
static LATEST: AtomicU64 = AtomicU64::new(0);

struct Drawn {
    icon: TrayIcon,
    menu: Option<TrayMenu>,
}

/// The icon of a state (PNGs rendered from `icons/*.svg`).
fn icon_png(state: State) -> &'static [u8] {
    match state {
        State::Running => include_bytes!("../../../icons/state-running.png"),
        State::Stale => include_bytes!("../../../icons/state-stale.png"),
        State::Down => include_bytes!("../../../icons/state-down.png"),
        State::Pending => include_bytes!("../../../icons/state-pending.png"),
        State::Stopped => include_bytes!("../../../icons/state-stopped.png"),
        State::Conflict => include_bytes!("../../../icons/state-conflict.png"),
        State::Unknown => include_bytes!("../../../icons/state-unknown.png"),
    }
}

fn icon(state: State) -> tauri::Result<Image<'static>> {
    Image::from_bytes(icon_png(state))
}

/// Where the tray icon library writes the icon's files on Linux (the tray
/// host reads a file): a folder of this user's own, never the shared
/// `/tmp/tray-icon` it falls back to without `XDG_RUNTIME_DIR`, which
/// another user of the computer may own. `None` elsewhere.
fn icon_dir(app: &AppHandle) -> Option<std::path::PathBuf> {
    use tauri::Manager as _;
    if !cfg!(target_os = "linux") {
        return None;
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from).filter(|d| d.is_dir());
    match runtime {
        Some(dir) => Some(dir.join("lockwatch-tray-icon")),
        None => app.path().app_cache_dir().ok().map(|d| d.join("tray-icon")),
    }
}

/// Puts the icon in the tray, `unknown` and with an empty menu until the
/// first redraw; menu clicks go to `on_menu`. On the main thread.
///
/// # Errors
/// Tauri's, when the icon cannot be placed.
pub fn show(app: &AppHandle, on_menu: impl Fn(&AppHandle, MenuEvent) + Send + Sync + 'static) -> tauri::Result<()> {
    let mut builder = TrayIconBuilder::with_id("lockwatch");
    if let Some(dir) = icon_dir(app) {
        builder = builder.temp_dir_path(dir);
    }
    let icon = builder
        .icon(icon(State::Unknown)?)
        .menu(&Menu::new(app)?)
        .tooltip("lockwatch")
        .on_menu_event(on_menu)
        .build(app)?;
    TRAY.with(|t| *t.borrow_mut() = Some(Drawn { icon, menu: None }));
    Ok(())
}

/// Redraws the tray from the app state: works the view out here (never
/// with the state lock held across a wait) and draws it on the main thread.
pub fn redraw(app: &AppHandle, desk: &Desk) {
    let _order = HANDOVER.lock().unwrap_or_else(|p| p.into_inner());
    let (view, autostart) = {
        let inner = desk.state().lock();
        let user = inner.user();
        let words = Words { tr: inner.tr(), time_of_day: &time_of_day };
        let jobs = inner.jobs.iter().map(|j| &j.known);
        let mut view = tray_view(jobs, &user, inner.settings.mute_until_ms, desktop_now_ms(), &words);
        if let Some(err) = &inner.settings_error {
            view.jobs.clear();
            view.mute_label = words.tr.ta("menu-settings-problem", &[("error", err.as_str().into())]);
        }
        (view, inner.settings.autostart)
    };
    let handle = app.clone();
    let this = LATEST.fetch_add(1, Ordering::SeqCst) + 1;
    let drawn = app.run_on_main_thread(move || {
        if LATEST.load(Ordering::SeqCst) != this {
            return;
        }
        TRAY.with(|t| {
            if let Some(drawn) = t.borrow_mut().as_mut()
                && let Err(err) = render(&handle, &drawn.icon, &mut drawn.menu, &view, autostart)
            {
                tracing::warn!(error = %err, "cannot update the tray");
            }
        });
    });
    if let Err(err) = drawn {
        tracing::warn!(error = %err, "cannot reach the tray's thread");
    }
}

/// What decides the menu's items: per job its name, whether it has an
/// error line, a confirmation line and a no-standby line, how many "on it"
/// lines, whether "I'm on it" is offered, and its submenu's title when it is
/// folded (in the menu's order); the fixed labels; the mute
/// submenu's title, and whether it offers "Unmute".
type Shape = (Vec<(String, (bool, bool, bool), usize, bool, Option<String>)>, Labels, String, bool);

/// The menu as built, to update it in place.
struct TrayMenu {
    shape: Shape,
    jobs: Vec<JobItems>,
    /// Only while notifications are muted.
    unmute: Option<Item>,
    autostart: CheckMenuItem<Wry>,
    icon: State,
}

struct JobItems {
    status: Item,
    flip: CheckMenuItem<Wry>,
    others: Item,
    standby: Option<Item>,
    on_it: Vec<Item>,
    ack: Option<Item>,
    confirm: Option<Item>,
    error: Option<Item>,
}

type Item = MenuItem<Wry>;

/// A menu item that says `text`, `enabled` or not.
fn item(app: &AppHandle, id: MenuId, text: &str, enabled: bool) -> tauri::Result<Item> {
    MenuItem::with_id(app, id.to_string(), text, enabled, None::<&str>)
}

/// Brings the tray up to date with `view`.
///
/// # Errors
/// Tauri's, when the menu cannot be built or changed.
fn render(
    app: &AppHandle,
    tray: &TrayIcon,
    current: &mut Option<TrayMenu>,
    view: &TrayView,
    autostart: bool,
) -> tauri::Result<()> {
    // Read once: the admin's entry, which she cannot turn off.
    let machine_starts_it = super::start_at_login::for_this_computer();
    // A new language changes every fixed label, and a submenu's title does
    // not follow set_text over the tray host's D-Bus menu: both rebuild.
    let shape = (
        view.jobs
            .iter()
            .map(|j| {
                let lines = (j.error_line.is_some(), j.confirm_line.is_some(), j.standby_line.is_some());
                (j.job.clone(), lines, j.on_it_lines.len(), j.ack_offered, j.folded.clone())
            })
            .collect(),
        view.labels.clone(),
        view.mute_label.clone(),
        view.unmute_label.is_some(),
    );
    let rebuild = current.as_ref().is_none_or(|m| m.shape != shape);
    if rebuild {
        let menu = Menu::new(app)?;
        let mut jobs = Vec::new();
        for j in &view.jobs {
            // Enabled (a disabled item is drawn grey, and this is the line that matters); it opens the dashboard.
            let status = item(app, MenuId::Status(j.job.clone()), &j.status_line, true)?;
            let flip = CheckMenuItem::with_id(
                app,
                MenuId::Flip(j.job.clone()).to_string(),
                &j.flip_label,
                j.can_flip,
                j.enabled_for_me.unwrap_or(false),
                None::<&str>,
            )?;
            let others = item(app, MenuId::Others(j.job.clone()), &j.others_line, false)?;
            let standby = match &j.standby_line {
                Some(text) => Some(item(app, MenuId::Standby(j.job.clone()), text, false)?),
                None => None,
            };
            let mut on_it = Vec::new();
            for (line, user) in j.on_it_lines.iter().zip(&j.on_it_users) {
                on_it.push(item(app, MenuId::OnIt { job: j.job.clone(), user: user.clone() }, line, false)?);
            }
            let ack = match j.ack_offered {
                true => Some(item(app, MenuId::Ack(j.job.clone()), &j.ack_label, j.own_ack.is_some())?),
                false => None,
            };
            let confirm = match &j.confirm_line {
                Some(text) => Some(item(app, MenuId::Confirm(j.job.clone()), text, false)?),
                None => None,
            };
            let error = match &j.error_line {
                Some(text) => Some(item(app, MenuId::Error(j.job.clone()), text, true)?),
                None => None,
            };
            let mut lines: Vec<&dyn IsMenuItem<Wry>> = vec![&status, &flip, &others];
            lines.extend(standby.iter().map(|i| i as &dyn IsMenuItem<Wry>));
            lines.extend(on_it.iter().map(|i| i as &dyn IsMenuItem<Wry>));
            lines.extend(ack.iter().chain(&confirm).chain(&error).map(|i| i as &dyn IsMenuItem<Wry>));
            match &j.folded {
                // A job not in trouble among many: one click away.
                Some(title) => {
                    menu.append(&Submenu::with_id_and_items(
                        app,
                        MenuId::Folded(j.job.clone()).to_string(),
                        title,
                        true,
                        &lines,
                    )?)?;
                }
                None => {
                    menu.append_items(&lines)?;
                    menu.append(&PredefinedMenuItem::separator(app)?)?;
                }
            }
            jobs.push(JobItems { status, flip, others, standby, on_it, ack, confirm, error });
        }
        if view.jobs.iter().any(|j| j.folded.is_some()) {
            menu.append(&PredefinedMenuItem::separator(app)?)?;
        }
        let labels = &view.labels;
        let unmute = match &view.unmute_label {
            Some(text) => Some(item(app, MenuId::Mute(Mute::Off), text, true)?),
            None => None,
        };
        let mute_for = [
            item(app, MenuId::Mute(Mute::OneHour), &labels.mute[0], true)?,
            item(app, MenuId::Mute(Mute::FourHours), &labels.mute[1], true)?,
            item(app, MenuId::Mute(Mute::UntilTomorrow), &labels.mute[2], true)?,
        ];
        let mut mute_items: Vec<&dyn IsMenuItem<Wry>> = vec![&mute_for[0], &mute_for[1], &mute_for[2]];
        if let Some(unmute) = &unmute {
            mute_items.push(unmute);
        }
        let mute = Submenu::with_id_and_items(app, MenuId::MuteMenu.to_string(), &view.mute_label, true, &mute_items)?;
        let autostart_item = CheckMenuItem::with_id(
            app,
            MenuId::Autostart.to_string(),
            if machine_starts_it { &labels.autostart_machine } else { &labels.autostart },
            !machine_starts_it,
            autostart || machine_starts_it,
            None::<&str>,
        )?;
        menu.append_items(&[
            &item(app, MenuId::Open, &labels.open, true)?,
            &mute,
            &item(app, MenuId::Settings, &labels.settings, true)?,
            &autostart_item,
            &PredefinedMenuItem::separator(app)?,
            &item(app, MenuId::Quit, &labels.quit, true)?,
        ])?;
        tray.set_menu(Some(menu))?;
        tray.set_icon(Some(icon(view.icon)?))?;
        tray.set_tooltip(Some(view.tooltip()))?;
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
        if let (Some(item), Some(text)) = (&items.standby, &j.standby_line) {
            item.set_text(text)?;
        }
        for (item, line) in items.on_it.iter().zip(&j.on_it_lines) {
            item.set_text(line)?;
        }
        if let Some(ack) = &items.ack {
            ack.set_text(&j.ack_label)?;
            ack.set_enabled(j.own_ack.is_some())?;
        }
        if let (Some(item), Some(text)) = (&items.confirm, &j.confirm_line) {
            item.set_text(text)?;
        }
        if let (Some(item), Some(text)) = (&items.error, &j.error_line) {
            item.set_text(text)?;
        }
    }
    tray.set_tooltip(Some(view.tooltip()))?;
    if let (Some(item), Some(text)) = (&m.unmute, &view.unmute_label) {
        item.set_text(text)?;
    }
    m.autostart.set_checked(autostart || machine_starts_it)?;
    if m.icon != view.icon {
        tray.set_icon(Some(icon(view.icon)?))?;
        m.icon = view.icon;
    }
    Ok(())
}
