//! The tray's process (`lockwatch-tray`): the icon and menu on GTK's main
//! loop, the watchers on the async runtime, notifications, and the
//! dashboard started on demand as a process of its own ([`window`]). No web
//! view and no GL are loaded here.

use std::sync::Arc;

use tray_icon::menu::MenuEvent;

use crate::desk::{Desk, Surface};
use crate::menu_id::MenuId;
use crate::settings::Overrides;
use crate::single_instance::Claim;
use crate::state::AppState;
use crate::window::Dashboard;
use crate::{
    actions, i18n, logging, model, notify, runtime, single_instance, store, supervisor, tray, tray_host, window,
};

/// The tray, as the shared modules see it.
struct Tray {
    dashboard: Arc<Dashboard>,
}

impl Surface for Tray {
    fn redraw(&self, desk: &Desk) {
        tray::redraw(desk);
    }

    fn emit(&self, _: &str, _: serde_json::Value) {}

    fn open(&self, desk: &Desk, view: &str) {
        self.dashboard.open(desk, view);
    }
}

/// Runs the tray app until Quit.
pub fn run() {
    skip_gtk_gl_probe();
    logging::init();
    let claim = match single_instance::claim("live") {
        Ok(Claim::Told) => {
            tracing::info!("lockwatch already runs in this session: its dashboard was opened");
            return;
        }
        Ok(Claim::First(conn)) => Some(conn),
        Err(err) => {
            tracing::warn!(error = %err, "no session bus to keep this app single: a second launch starts a second app");
            None
        }
    };
    if let Err(err) = runtime::start() {
        fail(&format!("cannot start its threads: {err}"));
    }
    if let Err(err) = gtk::init() {
        fail(&format!("cannot open the display ({err}); is DISPLAY or WAYLAND_DISPLAY set?"));
    }
    tray_host::quiet_xembed_icon_assertion();
    let (settings, problem) = store::load();
    let desktop_lang = i18n::Lang::of_desktop(|name| std::env::var(name).ok());
    let lang = settings.language.resolve(desktop_lang);
    let desk = Desk::new(
        AppState::new(settings, Overrides::from_env(), desktop_lang),
        Tray { dashboard: Arc::new(Dashboard::default()) },
    );
    if let Some(conn) = claim {
        let desk = desk.clone();
        single_instance::serve(conn, move |view| desk.open(&view));
    }
    if let Err(err) = tray::show() {
        fail(&format!("cannot put its icon in the tray: {err}"));
    }
    let on_menu_desk = desk.clone();
    MenuEvent::set_event_handler(Some(move |event: MenuEvent| on_menu(&on_menu_desk, event)));
    let start = desk.clone();
    runtime::spawn(async move { supervisor::restart(&start) });
    if let Some(problem) = problem {
        let tr = i18n::tr(lang);
        let note = model::Note::plain(tr.t("note-settings-reset"), problem);
        notify::show(&desk, &note, &tr, notify::Style { sound: false });
    }
    if std::env::var_os("LOCKWATCH_OPEN_DASHBOARD").is_some() {
        desk.open("live");
    } else {
        match tray_host::find() {
            Some(host) => tracing::info!(%host, "tray host found"),
            None => {
                tracing::warn!(
                    "no tray host (no org.kde.StatusNotifierWatcher on the session bus, no XEmbed system tray on the display): opening the dashboard instead"
                );
                desk.open("live?notray");
            }
        }
    }
    gtk::main();
}

fn fail(why: &str) -> ! {
    eprintln!("lockwatch-tray: {why}");
    std::process::exit(1);
}

/// GTK 3 on X11 probes GLX when it opens the display, to pick its visuals,
/// and with that loads Mesa's driver and its LLVM (~50 MB, on a desktop
/// without a GPU driver) into a process that never draws with GL: the
/// tray's icon and menu are drawn with cairo. `GDK_GL=disable` skips only
/// that probe; a value the user set wins, and the dashboard's process gets
/// the desktop's setting back.
fn skip_gtk_gl_probe() {
    if std::env::var_os("GDK_GL").is_none() {
        // SAFETY: the first thing `main` does; no other thread exists yet to
        // read the environment while it changes.
        unsafe { std::env::set_var("GDK_GL", "disable") };
        window::gl_probe_skipped();
    }
}

/// Menu clicks arrive on the main thread; whatever waits on Redis or the
/// disk runs on the async runtime instead.
fn on_menu(desk: &Desk, event: MenuEvent) {
    let Some(id) = MenuId::parse(event.id().as_ref()) else { return };
    match id {
        MenuId::Open => desk.open("live"),
        MenuId::Settings => desk.open("settings"),
        MenuId::Quit => gtk::main_quit(),
        MenuId::Autostart => off_main(desk, actions::toggle_autostart),
        MenuId::Mute(how) => off_main(desk, move |desk| actions::mute(desk, how)),
        MenuId::Flip(job) => off_main(desk, move |desk| actions::toggle_flag(desk, &job)),
        MenuId::Ack(job) => off_main(desk, move |desk| actions::toggle_ack(desk, &job)),
        // The status and a refused flip's short line lead to the details.
        MenuId::Status(_) | MenuId::Error(_) => desk.open("live"),
        MenuId::Others(_) | MenuId::OnIt { .. } | MenuId::Confirm(_) | MenuId::MuteMenu => {}
    }
}

fn off_main(desk: &Desk, action: impl FnOnce(&Desk) + Send + 'static) {
    let desk = desk.clone();
    runtime::spawn(async move { action(&desk) });
}
