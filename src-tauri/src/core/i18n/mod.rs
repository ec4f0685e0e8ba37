//! The app's words in English and Simplified Chinese: one Fluent catalog
//! (`locales/*.ftl`, built into the binary), the language chosen from the
//! desktop's locale or the settings, durations said the language's way.
//! The page gets its messages from here too ([`page::page_messages`]), so
//! no string lives twice. The CLI and all JSON stay English.

use std::sync::LazyLock;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use serde::{Deserialize, Serialize};
use unic_langid::LanguageIdentifier;

pub use page::page_messages;

mod page;

const EN: &str = include_str!("../../../locales/en.ftl");
const ZH_CN: &str = include_str!("../../../locales/zh-CN.ftl");

/// A language the app speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    En,
    /// Simplified Chinese.
    ZhHans,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::En, Lang::ZhHans];

    /// The BCP 47 tag (also the page's `<html lang>`).
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::ZhHans => "zh-CN",
        }
    }

    pub(crate) fn source(self) -> &'static str {
        match self {
            Lang::En => EN,
            Lang::ZhHans => ZH_CN,
        }
    }

    /// The language of a POSIX locale (`zh_CN.UTF-8`, `zh_Hans_SG`, `en_US`):
    /// Simplified Chinese for `zh` in mainland China, Singapore or the Hans
    /// script (and bare `zh`); English otherwise, Traditional Chinese included.
    pub fn of_locale(locale: &str) -> Lang {
        let name = locale.split(['.', '@']).next().unwrap_or_default().to_ascii_lowercase();
        let mut parts = name.split(['_', '-']);
        if parts.next() != Some("zh") {
            return Lang::En;
        }
        let rest: Vec<&str> = parts.collect();
        // A script, when given, decides; else the region; bare `zh` is Simplified.
        let simplified = if rest.contains(&"hans") {
            true
        } else if rest.contains(&"hant") {
            false
        } else {
            !rest.iter().any(|p| matches!(*p, "tw" | "hk" | "mo"))
        };
        if simplified { Lang::ZhHans } else { Lang::En }
    }

    /// The desktop's language, by POSIX precedence: `LC_ALL`, then
    /// `LC_MESSAGES`, then `LANG` (the first one set and not empty).
    pub fn of_desktop(var: impl Fn(&str) -> Option<String>) -> Lang {
        ["LC_ALL", "LC_MESSAGES", "LANG"]
            .iter()
            .find_map(|name| var(name).filter(|v| !v.is_empty()))
            .map_or(Lang::En, |locale| Lang::of_locale(&locale))
    }
}

/// The "Language" setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Language {
    /// The desktop's.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "en")]
    En,
    #[serde(rename = "zh-CN")]
    ZhHans,
}

impl Language {
    /// The language to speak, given the desktop's.
    pub fn resolve(self, desktop: Lang) -> Lang {
        match self {
            Language::Auto => desktop,
            Language::En => Lang::En,
            Language::ZhHans => Lang::ZhHans,
        }
    }
}

struct Catalog {
    en: FluentBundle<FluentResource>,
    zh: FluentBundle<FluentResource>,
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(|| Catalog { en: bundle(Lang::En), zh: bundle(Lang::ZhHans) });

fn bundle(lang: Lang) -> FluentBundle<FluentResource> {
    // The files are built in and checked by the tests; a slip still loads what parses.
    let resource = FluentResource::try_new(lang.source().to_owned()).unwrap_or_else(|(partial, errors)| {
        tracing::error!(lang = lang.tag(), ?errors, "the catalog has syntax errors");
        partial
    });
    let id: LanguageIdentifier = lang.tag().parse().unwrap_or_default();
    let mut bundle = FluentBundle::new_concurrent(vec![id]);
    // Unicode isolation marks show as boxes in some tray hosts.
    bundle.set_use_isolating(false);
    if let Err(errors) = bundle.add_resource(resource) {
        tracing::error!(lang = lang.tag(), ?errors, "the catalog repeats a message");
    }
    bundle
}

/// One message argument.
pub type Arg<'a> = (&'a str, FluentValue<'a>);

/// The words of one language.
#[derive(Clone, Copy)]
pub struct Tr {
    pub lang: Lang,
    bundle: &'static FluentBundle<FluentResource>,
}

impl std::fmt::Debug for Tr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tr").field("lang", &self.lang).finish()
    }
}

/// The words of `lang`.
pub fn tr(lang: Lang) -> Tr {
    let bundle = match lang {
        Lang::En => &CATALOG.en,
        Lang::ZhHans => &CATALOG.zh,
    };
    Tr { lang, bundle }
}

impl Tr {
    /// Message `id` without arguments.
    pub fn t(&self, id: &str) -> String {
        self.ta(id, &[])
    }

    /// Message `id` with `args`. A missing message shows its id (and is
    /// logged): a visible slip, never a crash.
    pub fn ta(&self, id: &str, args: &[Arg<'_>]) -> String {
        let Some(pattern) = self.bundle.get_message(id).and_then(|m| m.value()) else {
            tracing::warn!(lang = self.lang.tag(), id, "no such message in the catalog");
            return id.to_owned();
        };
        let mut fluent_args = FluentArgs::new();
        for (name, value) in args {
            fluent_args.set(*name, value.clone());
        }
        let mut errors = Vec::new();
        let text = self.bundle.format_pattern(pattern, Some(&fluent_args), &mut errors);
        if !errors.is_empty() {
            tracing::warn!(lang = self.lang.tag(), id, ?errors, "a message did not format cleanly");
        }
        text.into_owned()
    }

    /// A duration the language's way: "4 min 5 s", "4 分 5 秒".
    pub fn duration(&self, ms: u64) -> String {
        let n = |v: u64| FluentValue::from(v);
        match ms {
            0..1_000 => self.ta("duration-ms", &[("ms", n(ms))]),
            1_000..60_000 => self.ta("duration-s", &[("s", n(ms / 1000))]),
            60_000..3_600_000 => self.ta("duration-min", &[("min", n(ms / 60_000)), ("s", n(ms / 1000 % 60))]),
            _ => self.ta("duration-h", &[("h", n(ms / 3_600_000)), ("min", n(ms / 60_000 % 60))]),
        }
    }

    /// Names listed the language's way: "bob, carol", "bob、carol".
    pub fn list(&self, names: &[&str]) -> String {
        names.join(&self.t("list-separator"))
    }
}

#[cfg(test)]
mod tests {
    use fluent_syntax::ast;

    use super::*;

    /// The ids of the messages of `lang`'s catalog.
    pub(crate) fn ids(lang: Lang) -> Vec<String> {
        let resource = fluent_syntax::parser::parse(lang.source()).unwrap_or_else(|(_, e)| panic!("{lang:?}: {e:?}"));
        resource
            .body
            .iter()
            .filter_map(|e| match e {
                ast::Entry::Message(m) => Some(m.id.name.to_owned()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn both_catalogs_parse_and_have_the_same_messages() {
        let mut en = ids(Lang::En);
        let mut zh = ids(Lang::ZhHans);
        en.sort();
        zh.sort();
        let only_en: Vec<_> = en.iter().filter(|id| !zh.contains(id)).collect();
        let only_zh: Vec<_> = zh.iter().filter(|id| !en.contains(id)).collect();
        assert!(only_en.is_empty() && only_zh.is_empty(), "only in en: {only_en:?}; only in zh-CN: {only_zh:?}");
        assert!(en.len() > 100);
    }

    #[test]
    fn every_message_formats_without_errors_given_its_arguments() {
        let args: Vec<Arg> = ["job", "state", "server", "reason", "left", "duration", "since", "age", "users", "error"]
            .into_iter()
            .chain(["from", "to", "at", "kind", "host", "workers", "ms", "s", "min", "h", "message", "redis", "user"])
            .chain(["until", "time", "field", "variable", "note", "window", "runs", "why", "login", "silent"])
            .map(|name| (name, FluentValue::from(if matches!(name, "users" | "workers") { "2" } else { "x" })))
            .collect();
        for lang in Lang::ALL {
            let t = tr(lang);
            for id in ids(lang) {
                let pattern = t.bundle.get_message(&id).and_then(|m| m.value()).unwrap();
                let mut errors = Vec::new();
                let _ = t.bundle.format_pattern(pattern, Some(&args.iter().cloned().collect()), &mut errors);
                assert!(errors.is_empty(), "{lang:?} {id}: {errors:?}");
            }
        }
    }

    #[test]
    fn the_desktop_locale_picks_the_language() {
        for (locale, lang) in [
            ("zh_CN.UTF-8", Lang::ZhHans),
            ("zh_SG", Lang::ZhHans),
            ("zh_Hans", Lang::ZhHans),
            ("zh_Hans_HK.UTF-8", Lang::ZhHans),
            ("zh-CN", Lang::ZhHans),
            ("zh", Lang::ZhHans),
            ("zh_TW.UTF-8", Lang::En),
            ("zh_HK", Lang::En),
            ("zh_Hant_CN", Lang::En),
            ("en_US.UTF-8", Lang::En),
            ("de_DE@euro", Lang::En),
            ("C", Lang::En),
            ("POSIX", Lang::En),
        ] {
            assert_eq!(Lang::of_locale(locale), lang, "{locale}");
        }
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(Lang::of_desktop(env(&[("LANG", "zh_CN.UTF-8")])), Lang::ZhHans);
        assert_eq!(Lang::of_desktop(env(&[("LANG", "zh_CN.UTF-8"), ("LC_MESSAGES", "en_US.UTF-8")])), Lang::En);
        assert_eq!(Lang::of_desktop(env(&[("LC_ALL", "zh_SG"), ("LC_MESSAGES", "en_US")])), Lang::ZhHans);
        assert_eq!(Lang::of_desktop(env(&[("LC_ALL", ""), ("LANG", "zh_CN")])), Lang::ZhHans, "empty is unset");
        assert_eq!(Lang::of_desktop(env(&[])), Lang::En);
    }

    #[test]
    fn the_setting_overrides_the_desktop() {
        assert_eq!(Language::Auto.resolve(Lang::ZhHans), Lang::ZhHans);
        assert_eq!(Language::En.resolve(Lang::ZhHans), Lang::En);
        assert_eq!(Language::ZhHans.resolve(Lang::En), Lang::ZhHans);
        assert_eq!(serde_json::to_string(&Language::ZhHans).unwrap(), "\"zh-CN\"");
        assert_eq!(serde_json::from_str::<Language>("\"auto\"").unwrap(), Language::Auto);
    }

    #[test]
    fn durations_and_plurals_are_said_the_languages_way() {
        let en = tr(Lang::En);
        let zh = tr(Lang::ZhHans);
        assert_eq!(en.duration(303_000), "5 min 3 s");
        assert_eq!(zh.duration(303_000), "5 分 3 秒");
        assert_eq!(zh.duration(850), "850 毫秒");
        assert_eq!(zh.duration(7_380_000), "2 小时 3 分");
        assert_eq!(en.list(&["bob", "carol"]), "bob, carol");
        assert_eq!(zh.list(&["bob", "carol"]), "bob、carol");
        let connected = |t: &Tr, users: u64, silent: u64| {
            t.ta(
                "test-connected",
                &[
                    ("host", "db:6379".into()),
                    ("job", "outbound".into()),
                    ("users", users.into()),
                    ("workers", 1u64.into()),
                    ("silent", silent.into()),
                ],
            )
        };
        let said = "Connected to db:6379 and read job outbound: one registered user, one worker alive.";
        assert_eq!(connected(&en, 1, 0), said);
        let said = "Connected to db:6379 and read job outbound: 3 registered users, one worker alive, 1 silent.";
        assert_eq!(connected(&en, 3, 1), said);
        assert_eq!(connected(&zh, 3, 0), "已连接 db:6379 并读取任务 outbound：3 个已登记用户，1 台服务器在线。");
        assert_eq!(
            connected(&zh, 3, 2),
            "已连接 db:6379 并读取任务 outbound：3 个已登记用户，1 台服务器在线，2 台已无响应。"
        );
        assert_eq!(en.t("no-such-message"), "no-such-message");
    }
}
