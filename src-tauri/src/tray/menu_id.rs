//! The ids of the tray menu's items: built and read back by one enum, so a
//! click can only mean what the menu was built to mean.
//! (The menu takes the `Display` string as the id.)

use std::fmt;

use crate::core::actions::Mute;

/// A mute's part of its item's id.
fn mute_id(mute: Mute) -> &'static str {
    match mute {
        Mute::OneHour => "1h",
        Mute::FourHours => "4h",
        Mute::UntilTomorrow => "tomorrow",
        Mute::Off => "off",
    }
}

/// One item of the tray menu.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MenuId {
    /// A job's status line (not clickable).
    Status(String),
    /// A job's "Enabled for me" checkbox.
    Flip(String),
    /// Who else has a job enabled (not clickable).
    Others(String),
    /// That a job runs with no standby left (not clickable).
    Standby(String),
    /// Why a job's last flip was refused (not clickable).
    Error(String),
    /// The user's own flip of a job, confirmed (not clickable).
    Confirm(String),
    /// One supervisor's "on it" line of a job (not clickable).
    OnIt {
        job: String,
        user: String,
    },
    /// A job's "I'm on it" / "I'm no longer on it".
    Ack(String),
    /// The submenu that holds a job's lines, folded among many.
    Folded(String),
    /// The "Mute notifications" submenu.
    MuteMenu,
    Mute(Mute),
    Open,
    Settings,
    Autostart,
    Quit,
}

impl fmt::Display for MenuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MenuId::Status(job) => write!(f, "status:{job}"),
            MenuId::Flip(job) => write!(f, "flip:{job}"),
            MenuId::Others(job) => write!(f, "others:{job}"),
            MenuId::Standby(job) => write!(f, "standby:{job}"),
            MenuId::Error(job) => write!(f, "error:{job}"),
            MenuId::Confirm(job) => write!(f, "confirm:{job}"),
            // User names hold no ':' (input::name), job names may.
            MenuId::OnIt { job, user } => write!(f, "onit:{user}:{job}"),
            MenuId::Ack(job) => write!(f, "ack:{job}"),
            MenuId::Folded(job) => write!(f, "job:{job}"),
            MenuId::MuteMenu => f.write_str("mute"),
            MenuId::Mute(m) => write!(f, "mute:{}", mute_id(*m)),
            MenuId::Open => f.write_str("open"),
            MenuId::Settings => f.write_str("settings"),
            MenuId::Autostart => f.write_str("autostart"),
            MenuId::Quit => f.write_str("quit"),
        }
    }
}

impl MenuId {
    /// The item an id names; `None` for ids this menu never builds.
    pub fn parse(id: &str) -> Option<MenuId> {
        let fixed = [MenuId::MuteMenu, MenuId::Open, MenuId::Settings, MenuId::Autostart, MenuId::Quit];
        if let Some(item) = fixed.into_iter().find(|item| item.to_string() == id) {
            return Some(item);
        }
        let (kind, rest) = id.split_once(':')?;
        match kind {
            "status" => Some(MenuId::Status(rest.to_owned())),
            "flip" => Some(MenuId::Flip(rest.to_owned())),
            "others" => Some(MenuId::Others(rest.to_owned())),
            "standby" => Some(MenuId::Standby(rest.to_owned())),
            "error" => Some(MenuId::Error(rest.to_owned())),
            "confirm" => Some(MenuId::Confirm(rest.to_owned())),
            "onit" => {
                let (user, job) = rest.split_once(':')?;
                Some(MenuId::OnIt { job: job.to_owned(), user: user.to_owned() })
            }
            "ack" => Some(MenuId::Ack(rest.to_owned())),
            "job" => Some(MenuId::Folded(rest.to_owned())),
            "mute" => Mute::ALL.into_iter().find(|m| mute_id(*m) == rest).map(MenuId::Mute),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_reads_back_as_the_item_it_was_built_for() {
        let mut all = vec![MenuId::MuteMenu, MenuId::Open, MenuId::Settings, MenuId::Autostart, MenuId::Quit];
        all.extend(Mute::ALL.map(MenuId::Mute));
        // Job names may hold ':' and look like other ids.
        for job in ["outbound", "a:b", "flip:x", "quit", "出库"] {
            let job = job.to_owned();
            all.extend([
                MenuId::Status(job.clone()),
                MenuId::Folded(job.clone()),
                MenuId::Flip(job.clone()),
                MenuId::Others(job.clone()),
                MenuId::Standby(job.clone()),
                MenuId::OnIt { job: job.clone(), user: "a.b@site".into() },
                MenuId::Ack(job.clone()),
                MenuId::Confirm(job.clone()),
                MenuId::Error(job),
            ]);
        }
        for id in all {
            assert_eq!(MenuId::parse(&id.to_string()), Some(id.clone()), "{id}");
        }
    }

    #[test]
    fn ids_the_menu_never_builds_mean_nothing() {
        for id in ["", "flip", "mute:2h", "unknown:x", "Quit", "onit:alice"] {
            assert_eq!(MenuId::parse(id), None, "{id}");
        }
    }
}
