//! Tauri's build step: reads `tauri.conf.json` for `generate_context!`.

fn main() {
    tauri_build::build();
}
