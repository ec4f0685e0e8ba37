//! The app's one error type: what a command of the page, an action of the
//! menu or the settings could not do, in one sentence, or for a settings
//! form, field by field ([`FieldError`]). The page gets it as it reads it:
//! a string, or `{fields}` for a form.

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

impl From<lockwatch::Error> for AppError {
    fn from(err: lockwatch::Error) -> AppError {
        AppError::Library(Box::new(err))
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
