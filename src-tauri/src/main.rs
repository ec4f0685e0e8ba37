//! The lockwatch tray app (`lockwatch-tray`); everything is in the library.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    lockwatch_tray::tray_app::run();
}
