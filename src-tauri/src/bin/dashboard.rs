//! The lockwatch dashboard (`lockwatch-dashboard`), started by the tray app;
//! everything is in the library.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    lockwatch_tray::dashboard::run();
}
