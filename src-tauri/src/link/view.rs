//! What the dashboard shows: a [`View`], one enum for every way a view
//! travels. The tray names it in the dashboard's command line (its
//! [`View::arg`]: `live`, `live?notray`, `settings`, `off?job=NAME`) and in a
//! [`Message::Show`](super::Message::Show); the dashboard hands it to the
//! page as JSON (`{"view": "switch_off", "job": "outbound"}`), which shows
//! it as it reads.

use serde::{Deserialize, Serialize};

/// A view of the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "view", rename_all = "snake_case")]
pub enum View {
    /// The jobs as they are now; `no_tray`: opened because the desktop has
    /// no tray to show the icon, which the page says in a banner.
    Live {
        #[serde(default)]
        no_tray: bool,
    },
    /// The jobs' shared history.
    History,
    /// The settings form.
    Settings,
    /// The small window asking the last one with `job` on why they switch
    /// it off.
    SwitchOff { job: String },
}

impl Default for View {
    fn default() -> Self {
        View::Live { no_tray: false }
    }
}

/// The switch-off view's argument, before the job's name.
const SWITCH_OFF: &str = "off?job=";

impl View {
    /// The view as the dashboard's command line names it.
    pub fn arg(&self) -> String {
        match self {
            View::Live { no_tray: false } => "live".to_owned(),
            View::Live { no_tray: true } => "live?notray".to_owned(),
            View::History => "history".to_owned(),
            View::Settings => "settings".to_owned(),
            View::SwitchOff { job } => format!("{SWITCH_OFF}{}", query_escaped(job)),
        }
    }

    /// The view a command line names, as [`View::arg`] writes it; `None`
    /// for any other.
    pub fn from_arg(arg: &str) -> Option<View> {
        match arg {
            "live" => Some(View::Live { no_tray: false }),
            "live?notray" => Some(View::Live { no_tray: true }),
            "history" => Some(View::History),
            "settings" => Some(View::Settings),
            _ => {
                let job = arg.strip_prefix(SWITCH_OFF).filter(|job| !job.is_empty())?;
                Some(View::SwitchOff { job: lockwatch::address::percent_decode(job) })
            }
        }
    }
}

/// `text` safe in a URL's query (job names are few characters, but may hold `:`).
fn query_escaped(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_kind() -> Vec<View> {
        let mut views =
            vec![View::Live { no_tray: false }, View::Live { no_tray: true }, View::History, View::Settings];
        views.extend(["outbound", "wh:a b&c", "出库", "100%"].map(|job| View::SwitchOff { job: job.into() }));
        views
    }

    #[test]
    fn every_view_reads_back_from_the_command_line_and_from_json() {
        for view in every_kind() {
            assert_eq!(View::from_arg(&view.arg()), Some(view.clone()), "{}", view.arg());
            let json = serde_json::to_string(&view).unwrap();
            assert_eq!(serde_json::from_str::<View>(&json).unwrap(), view, "{json}");
        }
        for junk in ["", "live?", "off?job=", "Live", "off?jobs=x", "switch_off"] {
            assert_eq!(View::from_arg(junk), None, "{junk:?}");
        }
    }

    #[test]
    fn the_page_reads_a_view_by_its_name() {
        let off = serde_json::to_value(View::SwitchOff { job: "outbound".into() }).unwrap();
        assert_eq!(off, serde_json::json!({ "view": "switch_off", "job": "outbound" }));
        let live = serde_json::to_value(View::Live { no_tray: true }).unwrap();
        assert_eq!(live, serde_json::json!({ "view": "live", "no_tray": true }));
        assert_eq!(serde_json::to_value(View::Settings).unwrap(), serde_json::json!({ "view": "settings" }));
        let bare: View = serde_json::from_str(r#"{"view":"live"}"#).unwrap();
        assert_eq!(bare, View::default());
    }

    #[test]
    fn a_job_name_travels_in_the_command_line_intact() {
        assert_eq!(View::SwitchOff { job: "outbound".into() }.arg(), "off?job=outbound");
        assert_eq!(query_escaped("wh:a b&c"), "wh%3Aa%20b%26c");
        assert_eq!(query_escaped("出"), "%E5%87%BA");
        for job in ["outbound", "wh:a b&c", "出库", "100%"] {
            assert_eq!(lockwatch::address::percent_decode(&query_escaped(job)), job);
        }
        assert_eq!(lockwatch::address::percent_decode("50%zz"), "50%zz");
    }
}
