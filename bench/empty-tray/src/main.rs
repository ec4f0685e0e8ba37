//! An empty Tauri 2 tray-only app: a tray icon with a one-item menu
//! ("Quit"), no window, running until killed or quit. bench/tray.py runs
//! it beside `lockwatch-tray` under the same fake desktop: its memory is
//! the floor any Tauri tray app pays, which lockwatch's is compared with.
//! Nothing else on purpose: no plugins, no state, no environment tweaks.

use tauri::image::Image;
use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{App, RunEvent};

fn main() {
    let app = tauri::Builder::default().setup(|app| Ok(tray(app)?)).build(tauri::generate_context!());
    match app {
        Ok(app) => app.run(|_, event| {
            // No window is ever the last one here: only Quit ends the app.
            if let RunEvent::ExitRequested { api, code: None, .. } = event {
                api.prevent_exit();
            }
        }),
        Err(err) => {
            eprintln!("empty-tray: cannot start: {err}");
            std::process::exit(1);
        }
    }
}

/// The icon and its menu; the tray keeps them for the app's lifetime.
fn tray(app: &App) -> tauri::Result<()> {
    let quit = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
    TrayIconBuilder::with_id("empty-tray")
        .icon(Image::from_bytes(include_bytes!("../../../icons/32x32.png"))?)
        .menu(&Menu::with_items(app, &[&quit])?)
        .tooltip("empty-tray")
        .on_menu_event(|app, event| {
            if event.id() == "quit" {
                app.exit(0);
            }
        })
        .build(app)?;
    Ok(())
}
