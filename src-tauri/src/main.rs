//! The lockwatch tray app (`lockwatch-tray`), and with `--dashboard=<view>`
//! its dashboard's process; everything is in the library.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    match lockwatch_tray::link::pipe::dashboard_arg() {
        Some(view) => lockwatch_tray::dashboard::run(view),
        None => lockwatch_tray::tray::run(),
    }
}
