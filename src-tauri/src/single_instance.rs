//! One tray app per desktop session: the first owns a name on the session
//! bus; a second launch asks it to open its dashboard, and ends.

use std::time::Duration;

use dbus::blocking::Connection;
use dbus::blocking::stdintf::org_freedesktop_dbus::RequestNameReply;
use dbus::channel::MatchingReceiver;
use dbus::message::MatchRule;

const NAME: &str = "app.lockwatch.tray.SingleInstance";
const PATH: &str = "/app/lockwatch/tray/SingleInstance";
const OPEN: &str = "Open";

/// What claiming the session's name came to.
pub enum Claim {
    /// This is the first: it serves the others' requests ([`serve`]).
    First(Connection),
    /// Another app runs, and opened its dashboard.
    Told,
}

/// Claims the name, or asks its owner to open the dashboard on `view`.
///
/// # Errors
/// The bus's: no session bus, or an owner that did not answer.
pub fn claim(view: &str) -> Result<Claim, dbus::Error> {
    let conn = Connection::new_session()?;
    match conn.request_name(NAME, false, false, true)? {
        RequestNameReply::PrimaryOwner | RequestNameReply::AlreadyOwner => Ok(Claim::First(conn)),
        RequestNameReply::Exists | RequestNameReply::InQueue => {
            let owner = conn.with_proxy(NAME, PATH, Duration::from_secs(5));
            owner.method_call::<(), _, _, _>(NAME, OPEN, (view,))?;
            Ok(Claim::Told)
        }
    }
}

/// Answers the others' requests on a thread of its own: `open` gets each
/// view asked for.
pub fn serve(conn: Connection, open: impl Fn(String) + Send + 'static) {
    let rule = MatchRule::new_method_call().with_path(PATH).with_interface(NAME).with_member(OPEN);
    conn.start_receive(
        rule,
        Box::new(move |call, conn| {
            let view: String = call.read1().unwrap_or_else(|_| "live".to_owned());
            let _ = dbus::channel::Sender::send(conn, call.method_return());
            open(view);
            true
        }),
    );
    let spawned = std::thread::Builder::new().name("single-instance".into()).spawn(move || {
        while conn.process(Duration::from_secs(3600)).is_ok() {}
        tracing::warn!("the session bus went away: a second launch will not find this app");
    });
    if let Err(err) = spawned {
        tracing::warn!(error = %err, "cannot answer second launches");
    }
}
