//! The robots file (`--robots FILE`, TOML, one `[[robot]]` table each):
//! read, checked, and turned into [`Robot`]s whose secrets never show. A
//! secret is the `secret` and everything in the URL past its host (the
//! access token or key in the query, Feishu's hook id in the path): the
//! file or environment variables give them, logs and errors name a robot
//! by its kind, number and host ([`Robot::label`]), and [`Robot::scrub`]
//! cuts any secret out of a text that came from elsewhere (an HTTP error,
//! a robot's answer).

use std::fmt;
use std::path::Path;

use serde::Deserialize;

/// What a robot speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A DingTalk group robot: markdown, signed in the query.
    DingTalk,
    /// A WeCom (企业微信) group robot: markdown (text when it @-mentions).
    WeCom,
    /// A Feishu (Lark) custom bot: an interactive card, signed in the body.
    Feishu,
    /// Any HTTP endpoint: the event's JSON, as `lockwatch watch --json` prints it.
    Webhook,
}

impl Kind {
    /// The name the file uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::DingTalk => "dingtalk",
            Kind::WeCom => "wecom",
            Kind::Feishu => "feishu",
            Kind::Webhook => "webhook",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "dingtalk" => Kind::DingTalk,
            "wecom" => Kind::WeCom,
            "feishu" => Kind::Feishu,
            "webhook" => Kind::Webhook,
            _ => return None,
        })
    }
}

/// The language of a robot's messages; the facts are the same in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    ZhCn,
    En,
}

/// One chat robot, ready to post to.
#[derive(Clone)]
pub struct Robot {
    pub kind: Kind,
    /// How logs and errors name it: `dingtalk robot 1 (oapi.dingtalk.com)`,
    /// or its `name` from the file; never a secret.
    pub label: String,
    /// The full URL, with its token.
    url: url::Url,
    secret: Option<String>,
    /// Mobile numbers to @ (DingTalk, WeCom).
    pub mention: Vec<String>,
    pub language: Language,
    /// Minutes east of UTC that times are shown in (UTC+8 for zh-CN
    /// unless the file says otherwise, UTC for en).
    pub utc_offset_min: i32,
    /// A rate limit of the file's own, kept besides the robot's
    /// (`limit = "10/1m"`): at most this many posts (`.1`) within this
    /// many ms (`.0`).
    pub limit: Option<(u64, usize)>,
    /// An escalation robot (`escalate_after = "5m"`): told nothing at once,
    /// only of a trouble (a death, a stall, a conflict, lost data, the last
    /// standby gone) still there and with nobody on it this long after its
    /// message: the shift lead's group, the on-call's phone.
    pub escalate_after: Option<std::time::Duration>,
}

impl fmt::Debug for Robot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Robot").field("label", &self.label).field("language", &self.language).finish_non_exhaustive()
    }
}

impl Robot {
    /// The URL to post to, secret included: for the HTTP request only.
    pub fn url(&self) -> &url::Url {
        &self.url
    }

    /// A name for the robot that every serve process with the same robots
    /// file gives it, and that says nothing of its URL or secret: the first
    /// 8 bytes of SHA-256 over its kind and URL, in hex. The claims in
    /// Redis record by it which robots an incident was posted to.
    pub fn tag(&self) -> String {
        let text = format!("{}\n{}", self.kind.as_str(), self.url);
        let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
        digest.as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The signing secret, if the robot has one.
    pub fn secret(&self) -> Option<&str> {
        self.secret.as_deref()
    }

    /// `text` with every secret of this robot (the secret, the URL's
    /// query values and path segments, the URL itself) replaced by `…`.
    pub fn scrub(&self, text: &str) -> String {
        let mut secrets: Vec<String> = vec![self.url.as_str().to_owned()];
        secrets.extend(self.secret.clone());
        secrets.extend(self.url.query_pairs().map(|(_, v)| v.into_owned()).filter(|v| v.len() >= 4));
        if let Some(query) = self.url.query() {
            secrets.push(query.to_owned());
        }
        // A token in the path (Feishu's hook id, a webhook's own) is cut with
        // the whole path, and alone when long; `webhook`, `send` are words.
        if self.url.path().len() > 1 {
            secrets.push(self.url.path().to_owned());
        }
        secrets.extend(self.url.path_segments().into_iter().flatten().filter(|s| s.len() >= 8).map(str::to_owned));
        // Longest first, so a part of a longer secret is not cut first.
        secrets.retain(|s| !s.is_empty());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        let mut out = text.to_owned();
        for secret in secrets {
            out = out.replace(&secret, "…");
        }
        out
    }
}

/// Why the robots file cannot be used: one sentence, naming the file, the
/// robot and the field, never a secret.
#[derive(Debug, thiserror::Error)]
#[error("robots file {file}: {problem}")]
pub struct RobotsError {
    file: String,
    problem: String,
}

/// The file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    robot: Vec<Raw>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    kind: String,
    name: Option<String>,
    url: Option<String>,
    url_env: Option<String>,
    secret: Option<String>,
    secret_env: Option<String>,
    #[serde(default)]
    mention: Vec<String>,
    language: Option<String>,
    utc_offset: Option<String>,
    limit: Option<String>,
    escalate_after: Option<String>,
}

/// Reads and checks the robots file at `path`; `env` looks up the
/// variables that `url_env` and `secret_env` name.
///
/// # Errors
/// The file unreadable, not TOML, a field wrong, a variable not set.
pub fn load(path: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Vec<Robot>, RobotsError> {
    let fail = |problem: String| RobotsError { file: path.display().to_string(), problem };
    let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot be read ({e})")))?;
    parse(&text, env).map_err(fail)
}

/// Whether others than its owner may read the file at `path`, while it
/// holds a secret itself: one sentence to warn with.
pub fn exposed(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path).ok()?.permissions().mode();
        let text = std::fs::read_to_string(path).ok()?;
        let inline = text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("secret ") || l.starts_with("secret=") || l.starts_with("url ") || l.starts_with("url=")
        });
        (mode & 0o077 != 0 && inline).then(|| {
            format!(
                "the robots file {} holds secrets and others may read it (mode {:o}): chmod 600 it, or name the secrets by environment variable (url_env, secret_env)",
                path.display(),
                mode & 0o777
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Parses the file's text.
///
/// # Errors
/// What is wrong, in a sentence without the file's name.
pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Vec<Robot>, String> {
    // toml's own rendering quotes the offending line, which may hold a
    // secret: only its message and the line number are said.
    let file: File = toml::from_str(text).map_err(|e| {
        // Lines before the error's first character, plus its own.
        let line =
            e.span().map(|s| text.as_bytes()[..s.start.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1);
        let message = e.message().trim_end_matches('\n').to_owned();
        match line {
            Some(line) => format!("line {line}: {message}"),
            None => message,
        }
    })?;
    if file.robot.is_empty() {
        return Err("no [[robot]] table: add one per robot (kind, url, …)".to_owned());
    }
    let robots: Vec<Robot> =
        file.robot.into_iter().enumerate().map(|(i, raw)| robot(i + 1, raw, &env)).collect::<Result<_, _>>()?;
    if robots.iter().all(|r| r.escalate_after.is_some()) {
        return Err("every robot has escalate_after, so none is told of an incident at once: give at least one robot without it".to_owned());
    }
    Ok(robots)
}

fn robot(n: usize, raw: Raw, env: &impl Fn(&str) -> Option<String>) -> Result<Robot, String> {
    let kind = Kind::parse(&raw.kind)
        .ok_or_else(|| format!("robot {n}: kind \"{}\" is none of dingtalk, wecom, feishu, webhook", raw.kind))?;
    let at = format!("robot {n} ({})", kind.as_str());
    let from_env = |field: &str, var: &str| {
        env(var).filter(|v| !v.is_empty()).ok_or_else(|| format!("{at}: {field} names {var}, which is not set"))
    };
    let url = match (raw.url, raw.url_env) {
        (Some(url), None) => url,
        (None, Some(var)) => from_env("url_env", &var)?,
        (Some(_), Some(_)) => return Err(format!("{at}: give url or url_env, not both")),
        (None, None) => return Err(format!("{at}: url (or url_env) is missing")),
    };
    let secret = match (raw.secret, raw.secret_env) {
        (Some(secret), None) => Some(secret),
        (None, Some(var)) => Some(from_env("secret_env", &var)?),
        (Some(_), Some(_)) => return Err(format!("{at}: give secret or secret_env, not both")),
        (None, None) => None,
    };
    // The parser's message never holds the URL; the URL is not repeated.
    let url = url::Url::parse(url.trim()).map_err(|e| format!("{at}: the url is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("{at}: the url must be http:// or https:// with a host"));
    }
    if kind == Kind::Webhook && secret.is_some() {
        return Err(format!("{at}: a webhook takes no secret (put any token in its url)"));
    }
    if !raw.mention.is_empty() && !matches!(kind, Kind::DingTalk | Kind::WeCom) {
        return Err(format!("{at}: only dingtalk and wecom robots can @ by mobile number: remove mention"));
    }
    if let Some(bad) =
        raw.mention.iter().find(|m| m.is_empty() || !m.chars().all(|c| c.is_ascii_digit() || c == '+' || c == '-'))
    {
        return Err(format!("{at}: mention \"{bad}\" is not a mobile number (digits, + and - only)"));
    }
    let language = match raw.language.as_deref() {
        None | Some("zh-CN") => Language::ZhCn,
        Some("en") => Language::En,
        Some(other) => return Err(format!("{at}: language \"{other}\" is neither zh-CN nor en")),
    };
    let utc_offset_min = match raw.utc_offset.as_deref() {
        Some(text) => parse_offset(text).ok_or_else(|| format!("{at}: utc_offset \"{text}\" is not like +08:00"))?,
        None if language == Language::ZhCn => 8 * 60,
        None => 0,
    };
    let limit = match raw.limit.as_deref() {
        Some(text) => Some(
            parse_limit(text)
                .ok_or_else(|| format!("{at}: limit \"{text}\" is not like \"10/1m\" (at most 10 posts a minute)"))?,
        ),
        None => None,
    };
    let escalate_after = match raw.escalate_after.as_deref() {
        Some(text) => Some(
            crate::duration::parse_duration(text)
                .ok()
                .filter(|d| (std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(86_400)).contains(d))
                .ok_or_else(|| format!("{at}: escalate_after \"{text}\" is not a time from 1s to 24h, like \"5m\""))?,
        ),
        None => None,
    };
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_owned(),
    };
    let label = match raw.name {
        Some(name) => format!("{} robot \"{name}\" ({host})", kind.as_str()),
        None => format!("{} robot {n} ({host})", kind.as_str()),
    };
    Ok(Robot { kind, label, url, secret, mention: raw.mention, language, utc_offset_min, limit, escalate_after })
}

/// `10/1m` → (60 000 ms, 10): at most 10 posts within a minute.
fn parse_limit(text: &str) -> Option<(u64, usize)> {
    let (n, within) = text.split_once('/')?;
    let n: usize = n.trim().parse().ok().filter(|n| *n > 0)?;
    let ms = crate::duration::parse_duration(within).ok()?.as_millis();
    (ms > 0).then_some((u64::try_from(ms).ok()?, n))
}

/// `+08:00`, `-05:30`, `+8`, `Z` → minutes east of UTC.
fn parse_offset(text: &str) -> Option<i32> {
    if text == "Z" || text == "UTC" {
        return Some(0);
    }
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 14 && m < 60).then_some(sign * (h * 60 + m))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    fn env(var: &str) -> Option<String> {
        (var == "DING_SECRET").then(|| "SECfromtheenvironment".to_owned())
    }

    #[test]
    fn a_file_with_each_kind_is_read() {
        let text = format!(
            r#"
[[robot]]
kind = "dingtalk"
url = "https://oapi.dingtalk.com/robot/send?access_token={TOKEN}"
secret_env = "DING_SECRET"
mention = ["13800000000"]
language = "zh-CN"

[[robot]]
kind = "wecom"
url = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={TOKEN}"
language = "en"

[[robot]]
kind = "feishu"
name = "on-call"
url = "https://open.feishu.cn/open-apis/bot/v2/hook/{TOKEN}"
secret = "feishu-secret"
utc_offset = "+05:30"

[[robot]]
kind = "webhook"
url = "http://relay.intranet:8080/lockwatch"
"#
        );
        let robots = parse(&text, env).unwrap();
        assert_eq!(robots.len(), 4);
        assert_eq!(robots[0].secret(), Some("SECfromtheenvironment"));
        assert_eq!(robots[0].label, "dingtalk robot 1 (oapi.dingtalk.com)");
        assert_eq!(robots[0].utc_offset_min, 480);
        assert_eq!((robots[1].language, robots[1].utc_offset_min), (Language::En, 0));
        assert_eq!(robots[2].label, "feishu robot \"on-call\" (open.feishu.cn)");
        assert_eq!(robots[2].utc_offset_min, 330);
        assert_eq!(robots[3].label, "webhook robot 4 (relay.intranet:8080)");
        for robot in &robots {
            assert!(!format!("{robot:?}").contains(TOKEN));
        }
    }

    #[test]
    fn a_robots_tag_is_the_same_for_the_same_robot_and_holds_no_secret() {
        let text = |url: &str| format!("[[robot]]\nkind = \"wecom\"\nurl = \"{url}\"\n");
        let url = format!("https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={TOKEN}");
        let (a, b) = (parse(&text(&url), env).unwrap().remove(0), parse(&text(&url), env).unwrap().remove(0));
        assert_eq!(a.tag(), b.tag());
        assert_eq!(a.tag().len(), 16);
        assert!(!TOKEN.contains(&a.tag()) && !a.tag().contains("qyapi"));
        let other = parse(&text(&format!("{url}x")), env).unwrap().remove(0);
        assert_ne!(a.tag(), other.tag());
    }

    #[test]
    fn scrub_cuts_tokens_from_query_and_path_and_the_secret() {
        let text = format!(
            "[[robot]]\nkind = \"feishu\"\nurl = \"https://open.feishu.cn/open-apis/bot/v2/hook/{TOKEN}\"\nsecret = \"feishu-secret\"\n"
        );
        let robot = parse(&text, env).unwrap().remove(0);
        let said = format!("error at https://open.feishu.cn/open-apis/bot/v2/hook/{TOKEN}: {TOKEN} feishu-secret");
        let scrubbed = robot.scrub(&said);
        assert!(!scrubbed.contains(TOKEN) && !scrubbed.contains("feishu-secret"), "{scrubbed}");
    }

    #[test]
    fn a_short_token_in_a_webhooks_path_or_query_is_cut_too() {
        let text = "[[robot]]\nkind = \"webhook\"\nurl = \"http://relay:8080/hook/shorttok99?k=ab12\"\n";
        let robot = parse(text, env).unwrap().remove(0);
        let scrubbed = robot.scrub("HTTP 404 (no route for /hook/shorttok99 with k=ab12)");
        assert!(!scrubbed.contains("shorttok99") && !scrubbed.contains("ab12"), "{scrubbed}");
    }

    #[test]
    fn mistakes_are_one_sentence_without_the_secret() {
        let cases = [
            ("kind = \"slack\"\nurl = \"https://x.example/\"", "kind \"slack\" is none of"),
            ("kind = \"dingtalk\"", "url (or url_env) is missing"),
            (
                "kind = \"dingtalk\"\nurl = \"https://x.example/\"\nsecret_env = \"NOPE\"",
                "secret_env names NOPE, which is not set",
            ),
            ("kind = \"feishu\"\nurl = \"https://x.example/\"\nmention = [\"138\"]", "only dingtalk and wecom"),
            ("kind = \"webhook\"\nurl = \"https://x.example/\"\nsecret = \"s\"", "a webhook takes no secret"),
            ("kind = \"wecom\"\nurl = \"ftp://x.example/\"", "must be http:// or https://"),
            ("kind = \"wecom\"\nurl = \"https://x.example/\"\nlanguage = \"fr\"", "neither zh-CN nor en"),
            ("kind = \"wecom\"\nurl = \"https://x.example/\"\ncolour = \"red\"", "unknown field `colour`"),
        ];
        for (body, said) in cases {
            let err = parse(&format!("[[robot]]\n{body}\n"), env).err().unwrap();
            assert!(err.contains(said), "{body}: {err}");
        }
        // A syntax error on the secret's line names the line, not its text.
        let err = parse(&format!("[[robot]]\nkind = \"dingtalk\"\nsecret = \"{TOKEN}\n"), env).err().unwrap();
        assert!(err.starts_with("line 3:") && !err.contains(TOKEN), "{err}");
        // An error at a line's first character names that line.
        for text in ["[[robot]]\nfoo\n", "# robots\nfoo", "[[robot]]\n[x\n", "a = 1\nb = \n", "a = 1\n= 2\n"] {
            let err = parse(text, env).err().unwrap();
            assert!(err.starts_with("line 2:"), "{text:?}: {err}");
        }
        assert!(parse("", env).err().unwrap().contains("no [[robot]] table"));
    }

    #[test]
    fn a_limit_of_the_files_own_reads_as_posts_within_a_time() {
        let robot = |limit: &str| {
            parse(&format!("[[robot]]\nkind = \"dingtalk\"\nurl = \"https://x.example/\"\nlimit = \"{limit}\"\n"), env)
        };
        assert_eq!(robot("10/1m").unwrap()[0].limit, Some((60_000, 10)));
        assert_eq!(robot("4/2s").unwrap()[0].limit, Some((2_000, 4)));
        for bad in ["10", "0/1m", "10/1", "x/1m", "10/0s"] {
            let err = robot(bad).err().unwrap();
            assert!(err.contains("robot 1 (dingtalk): limit") && err.contains("10/1m"), "{bad}: {err}");
        }
    }

    #[test]
    fn an_escalation_robot_takes_a_delay_and_one_robot_at_least_is_told_at_once() {
        let first = "[[robot]]\nkind = \"dingtalk\"\nurl = \"https://x.example/a\"\n";
        let lead = |after: &str| {
            format!("[[robot]]\nkind = \"wecom\"\nurl = \"https://x.example/b\"\nescalate_after = \"{after}\"\n")
        };
        let robots = parse(&format!("{first}{}", lead("5m")), env).unwrap();
        assert_eq!(robots[0].escalate_after, None);
        assert_eq!(robots[1].escalate_after, Some(std::time::Duration::from_secs(300)));
        for bad in ["5", "0s", "25h", "soon"] {
            let err = parse(&format!("{first}{}", lead(bad)), env).err().unwrap();
            assert!(err.contains("robot 2 (wecom): escalate_after") && err.contains("1s to 24h"), "{bad}: {err}");
        }
        let err = parse(&lead("5m"), env).err().unwrap();
        assert!(err.contains("every robot has escalate_after"), "{err}");
    }

    #[test]
    fn offsets_read_as_minutes_east_of_utc() {
        assert_eq!(parse_offset("+08:00"), Some(480));
        assert_eq!(parse_offset("-05:30"), Some(-330));
        assert_eq!(parse_offset("+8"), Some(480));
        assert_eq!(parse_offset("Z"), Some(0));
        assert_eq!(parse_offset("08:00"), None);
        assert_eq!(parse_offset("+25"), None);
    }
}
