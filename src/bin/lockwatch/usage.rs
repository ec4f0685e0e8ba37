//! Reading the command line, and what a mistake in it looks like: one
//! sentence and the usage line on stderr, exit 3. Monitoring systems read
//! exit 2 (clap's own code for a usage error) as CRITICAL, while a typo in
//! their command line says nothing about the job: it is UNKNOWN. `--help`
//! and `--version` print to stdout and exit 0.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::FromArgMatches as _;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::args::{self, Cli};

/// The exit code of a command line that cannot be used (Nagios UNKNOWN).
pub const EXIT_USAGE: u8 = 3;

/// Parses the command line `args` (program name first).
///
/// # Errors
/// The exit code to end with, once help, the version or a usage error has
/// been printed.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Cli, ExitCode> {
    let args: Vec<OsString> = args.into_iter().collect();
    let mut cmd = args::command();
    let err = match cmd.try_get_matches_from_mut(&args).and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => return Ok(cli),
        Err(err) => err,
    };
    if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        // A closed pipe (`lockwatch --help | head -1`) is no failure.
        let _ = err.print();
        return Err(ExitCode::SUCCESS);
    }
    let name = command_named(&cmd, &args);
    let (place, usage) = match name.as_deref().and_then(|name| cmd.find_subcommand_mut(name)) {
        Some(sub) => (format!("lockwatch {}", sub.get_name()), sub.render_usage()),
        None => ("lockwatch".to_owned(), cmd.render_usage()),
    };
    eprintln!("lockwatch: {}\n{usage}", sentence(&err, &place, &cmd));
    Err(ExitCode::from(EXIT_USAGE))
}

/// The command the line names, when the mistake came after it: the usage
/// line to show is then that command's. Skips the values of options given
/// before it (`--job status status` names `status` once).
fn command_named(cmd: &clap::Command, args: &[OsString]) -> Option<String> {
    let mut tokens = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(token) = tokens.next() {
        if token == "--" {
            return None;
        }
        if let Some(long) = token.strip_prefix("--") {
            if cmd.get_arguments().any(|a| a.get_long() == Some(long) && a.get_action().takes_values()) {
                tokens.next();
            }
        } else if !token.starts_with('-') {
            return cmd.find_subcommand(token.as_ref()).map(|sub| sub.get_name().to_owned());
        }
    }
    None
}

/// One sentence: what is wrong, and what to write instead when clap knows
/// (a similar option or command, the form a value takes).
fn sentence(err: &clap::Error, place: &str, cmd: &clap::Command) -> String {
    let text = |kind| match err.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) if !v.is_empty() => Some(v.join("' or '")),
        _ => None,
    };
    let mut out = match (err.kind(), text(ContextKind::InvalidArg), text(ContextKind::InvalidSubcommand)) {
        (ErrorKind::UnknownArgument, Some(arg), _) if arg.starts_with('-') => {
            format!("'{arg}' is not an option of {place}")
        }
        (ErrorKind::UnknownArgument, Some(arg), _) => format!("{place} takes no argument '{arg}'"),
        (ErrorKind::InvalidSubcommand, _, Some(name)) => format!("'{name}' is not a command of {place}"),
        (ErrorKind::MissingRequiredArgument, Some(_), _) => {
            let missing = match err.get(ContextKind::InvalidArg) {
                // A group of which one is needed reads `<--a <A>|--b <B>>`: say it in words.
                Some(ContextValue::Strings(v)) => v
                    .iter()
                    .map(|m| {
                        m.strip_prefix('<')
                            .and_then(|g| g.strip_suffix('>'))
                            .map_or(m.clone(), |g| g.replace('|', " or "))
                    })
                    .collect::<Vec<_>>()
                    .join(" and "),
                _ => String::new(),
            };
            format!("{place} needs {missing}")
        }
        (ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, ..) => {
            let names: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).filter(|n| *n != "help").collect();
            format!("give a command: {}", names.join(", "))
        }
        (ErrorKind::ValueValidation | ErrorKind::InvalidValue, Some(arg), _) => {
            let flag = arg.split(' ').next().unwrap_or_default();
            let value = shown_value(&text(ContextKind::InvalidValue).unwrap_or_default());
            match std::error::Error::source(err) {
                Some(why) => format!("{flag} {value}: {why}"),
                None => match text(ContextKind::ValidValue) {
                    Some(valid) => format!("{flag} {value}: use '{valid}'"),
                    None => format!("{flag} {value}: {}", first_line(err)),
                },
            }
        }
        _ => first_line(err),
    };
    if let Some(similar) = text(ContextKind::SuggestedArg).or_else(|| text(ContextKind::SuggestedSubcommand)) {
        out.push_str(&format!("; did you mean '{similar}'?"));
    }
    if let Some(ContextValue::StyledStrs(tips)) = err.get(ContextKind::Suggested) {
        for tip in tips {
            out.push_str(&format!("; {tip}"));
        }
    }
    out
}

/// clap's own wording of the error, for the rare kinds this module does not
/// phrase itself.
fn first_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let line = rendered.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

/// A value as the user typed it, quoted only where the bare text would blur.
fn shown_value(value: &str) -> String {
    if value.is_empty() || value.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
        format!("{value:?}")
    } else {
        value.to_owned()
    }
}
