//! The app's errors: what a command of the page, an action of the menu or
//! the settings could not do ([`AppError`]), in one sentence, or for a
//! settings form, field by field ([`FieldError`]), which the page gets as it
//! reads it: a string, or `{fields}` for a form; and what the computer would
//! not do for the app ([`SystemError`]).

use lockwatch::input::{Field, Invalid};
use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

/// What the app could not do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AppError {
    /// The settings cannot take effect, so nothing is watched.
    #[error("the settings cannot take effect; open Settings")]
    Unconfigured,
    /// A setting, or the environment variable named, breaks the library's
    /// input rule.
    #[error("{invalid}{}", .variable.map(|v| format!(" (from {v})")).unwrap_or_default())]
    Setting { invalid: Box<Invalid>, variable: Option<&'static str> },
    /// The OS keyring could not be used.
    #[error("{0}")]
    Keyring(String),
    /// A job the settings do not name.
    #[error("job {0} is not watched")]
    NotWatched(String),
    /// Redis refused a write of the user's own key (or could not be
    /// reached): said in the supervisor's words, by the kind of failure.
    #[error("{0}")]
    Refused(String),
    /// What the library refused or failed at, in its sentence.
    #[error(transparent)]
    Library(Box<lockwatch::Error>),
    /// The fields of a settings form that break their rules.
    #[error("{}", .0.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join("; "))]
    Form(Vec<FieldError>),
    /// The tray's process, which notifies, is not running: said in the
    /// user's language.
    #[error("{0}")]
    NoTray(String),
    /// The window system's (Tauri's) error, in its sentence.
    #[error("{0}")]
    Window(String),
}

/// What the computer would not do for the app, kept typed to its source:
/// a settings file that is not settings, a file the app keeps, or the
/// desktop's answer (the window system, a plugin, the registry, the
/// notification service). Logged, or put in the user's words by the caller.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SystemError {
    /// A settings file's text, or a value in it, is not what settings are.
    #[error(transparent)]
    Settings(#[from] serde_json::Error),
    /// A settings file, or its `settings`, is no JSON object.
    #[error("{what} is {found}, not an object")]
    NotAnObject { what: &'static str, found: &'static str },
    /// A file the app keeps could not be read or written.
    #[error("{}: {source}", path.display())]
    File { path: std::path::PathBuf, source: std::io::Error },
    /// The desktop's answer to `what`, in its own words.
    #[error("{what}: {source}")]
    Desktop { what: &'static str, source: Box<dyn std::error::Error + Send + Sync> },
    /// The system has notifications off for the app: why, in a sentence.
    #[error("{0}")]
    NotificationsOff(&'static str),
    /// The system gave the app no folder of its own for its data.
    #[error("no local data folder")]
    NoDataFolder,
}

impl SystemError {
    /// `what` holds `value`, which is no object.
    pub fn not_an_object(what: &'static str, value: &serde_json::Value) -> SystemError {
        use serde_json::Value;
        let found = match value {
            Value::Null => "null",
            Value::Bool(_) => "true or false",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "a list",
            Value::Object(_) => "an object",
        };
        SystemError::NotAnObject { what, found }
    }

    /// Wraps the desktop's error while doing `what`.
    pub fn desktop<E: std::error::Error + Send + Sync + 'static>(what: &'static str) -> impl FnOnce(E) -> SystemError {
        move |source| SystemError::Desktop { what, source: Box::new(source) }
    }

    /// Wraps a file's error at `path`.
    pub fn file(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> SystemError + '_ {
        move |source| SystemError::File { path: path.to_owned(), source }
    }
}

/// A refused input, for the settings page: the form field it belongs to and
/// one sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: Field,
    pub message: String,
}

impl From<Invalid> for FieldError {
    fn from(invalid: Invalid) -> Self {
        FieldError { field: invalid.field, message: invalid.to_string() }
    }
}

impl From<Invalid> for AppError {
    fn from(invalid: Invalid) -> AppError {
        AppError::Setting { invalid: Box::new(invalid), variable: None }
    }
}

impl From<lockwatch::Error> for AppError {
    /// An input the library refused is said by its field's label, as the
    /// settings form says it, not by the command line's flag.
    fn from(err: lockwatch::Error) -> AppError {
        match err {
            lockwatch::Error::Input(invalid) => AppError::Setting { invalid, variable: None },
            err => AppError::Library(Box::new(err)),
        }
    }
}

impl Serialize for AppError {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AppError::Form(fields) => {
                let mut form = s.serialize_struct("Invalid", 1)?;
                form.serialize_field("fields", fields)?;
                form.end()
            }
            other => s.serialize_str(&other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_gets_a_sentence_or_a_form_s_fields() {
        let json = |e: AppError| serde_json::to_value(e).unwrap();
        assert_eq!(json(AppError::NotWatched("outbound".into())), "job outbound is not watched");
        assert_eq!(
            json(AppError::Refused("Redis does not let bob change this.".into())),
            "Redis does not let bob change this."
        );
        let field = FieldError { field: Field::User, message: "Your name \"a b\": …".into() };
        assert_eq!(
            json(AppError::Form(vec![field])),
            serde_json::json!({ "fields": [{ "field": "user", "message": "Your name \"a b\": …" }] })
        );
    }
}
