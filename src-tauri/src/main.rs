//! The lockwatch tray app; everything is in the library.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    lockwatch_tray::run();
}
