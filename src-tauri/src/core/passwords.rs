//! Where the Redis password lives: the OS keyring (Secret Service on Linux),
//! or this process's memory where there is none. Never a plain file.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use super::error::AppError;

const KEYRING_SERVICE: &str = "lockwatch";
/// How long to wait for the OS keyring before going on without it.
const KEYRING_PATIENCE: Duration = Duration::from_secs(2);

/// The keyring account of a Redis login: `user@host:port`.
pub fn account(user: Option<&str>, host: &str) -> String {
    format!("{}@{host}", user.unwrap_or("default"))
}

/// Where passwords live.
pub trait PasswordStore: Send + Sync {
    /// # Errors
    /// [`AppError::Keyring`] when the store cannot be used at all.
    fn get(&self, account: &str) -> Result<Option<String>, AppError>;
    /// # Errors
    /// [`AppError::Keyring`] when the store cannot be used at all.
    fn set(&self, account: &str, password: &str) -> Result<(), AppError>;
}

/// The app's password store: the OS keyring (Secret Service on Linux), and
/// where there is none, this process's memory (the password is then asked
/// again after a restart, or taken from `LOCKWATCH_REDIS_URL`).
pub static KEYRING: LazyLock<Keyring> = LazyLock::new(Keyring::default);

#[derive(Default)]
pub struct Keyring {
    memory: Mutex<HashMap<String, String>>,
}

impl Keyring {
    /// Keeps `password` for `account` in this process's memory only: the
    /// tray's, told by the dashboard's on a desktop without a keyring.
    pub fn remember(&self, account: &str, password: &str) {
        self.memory.lock().unwrap_or_else(|p| p.into_inner()).insert(account.to_owned(), password.to_owned());
    }
}

impl PasswordStore for Keyring {
    fn get(&self, account: &str) -> Result<Option<String>, AppError> {
        let remembered = self.memory.lock().unwrap_or_else(|p| p.into_inner()).get(account).cloned();
        if remembered.is_some() {
            return Ok(remembered);
        }
        // A locked keyring may answer with an unlock prompt nobody sees (or
        // never answer): ask from a thread and give up after a while.
        let (tx, rx) = std::sync::mpsc::channel();
        let account = account.to_owned();
        std::thread::spawn(move || {
            let result = keyring::Entry::new(KEYRING_SERVICE, &account).and_then(|e| e.get_password());
            let _ = tx.send(result);
        });
        match rx.recv_timeout(KEYRING_PATIENCE) {
            Ok(Ok(p)) => Ok(Some(p)),
            Ok(Err(keyring::Error::NoEntry)) => Ok(None),
            Ok(Err(e)) => Err(AppError::Keyring(e.to_string())),
            Err(_) => {
                Err(AppError::Keyring(format!("the keyring did not answer within {KEYRING_PATIENCE:?} (locked?)")))
            }
        }
    }

    fn set(&self, account: &str, password: &str) -> Result<(), AppError> {
        let saved = keyring::Entry::new(KEYRING_SERVICE, account).and_then(|e| e.set_password(password));
        if saved.is_err() {
            self.remember(account, password);
        }
        saved.map_err(|e| {
            AppError::Keyring(format!("no OS keyring ({e}); the password is kept in memory until lockwatch quits"))
        })
    }
}
