//! The messages the page fills in itself (`page-…`, `duration-…`,
//! `list-…`), as templates with `{name}` for each argument, so the page and
//! the tray speak from one catalog.

use std::collections::BTreeMap;

use fluent_syntax::ast;

use super::Lang;

/// The prefixes of the messages the page shows.
const PAGE_PREFIXES: [&str; 3] = ["page-", "duration-", "list-"];

/// The messages the page fills in itself, as templates with `{name}` for
/// each variable. They take plain variables only (a test checks); messages
/// with selectors are formatted by the app.
pub fn page_messages(lang: Lang) -> BTreeMap<String, String> {
    let resource = match fluent_syntax::parser::parse(lang.source()) {
        Ok(r) => r,
        Err((r, _)) => r,
    };
    resource
        .body
        .iter()
        .filter_map(|entry| match entry {
            ast::Entry::Message(m) if PAGE_PREFIXES.iter().any(|p| m.id.name.starts_with(p)) => {
                Some((m.id.name.to_owned(), template(m.value.as_ref()?)?))
            }
            _ => None,
        })
        .collect()
}

/// A pattern as a template, or `None` when it holds more than text and variables.
fn template(pattern: &ast::Pattern<&str>) -> Option<String> {
    let mut out = String::new();
    for element in &pattern.elements {
        match element {
            ast::PatternElement::TextElement { value } => out.push_str(value),
            ast::PatternElement::Placeable { expression: ast::Expression::Inline(inline) } => match inline {
                ast::InlineExpression::VariableReference { id } => {
                    out.push('{');
                    out.push_str(id.name);
                    out.push('}');
                }
                ast::InlineExpression::StringLiteral { value } => out.push_str(value),
                _ => return None,
            },
            ast::PatternElement::Placeable { .. } => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::i18n::tests::ids;

    #[test]
    fn the_pages_messages_are_plain_templates_in_both_languages() {
        for lang in Lang::ALL {
            let page = page_messages(lang);
            for id in ids(lang).iter().filter(|id| PAGE_PREFIXES.iter().any(|p| id.starts_with(p))) {
                assert!(page.contains_key(id), "{lang:?} {id} has more than text and variables");
            }
        }
        assert_eq!(page_messages(Lang::ZhHans)["duration-min"], "{min} 分 {s} 秒");
        assert_eq!(page_messages(Lang::En)["page-ago"], "{duration} ago");
        assert_eq!(page_messages(Lang::En)["list-separator"], ", ");
    }

    #[test]
    fn every_message_the_page_asks_for_is_in_the_catalog() {
        // The page names its messages literally ("page-…", "duration-…"), in
        // its scripts and in index.html's data-t attributes.
        let ui = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui");
        let mut asked = Vec::new();
        for entry in std::fs::read_dir(&ui).unwrap() {
            let path = entry.unwrap().path();
            if !path.extension().is_some_and(|e| e == "js" || e == "html") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for prefix in ["\"page-", "\"duration-", "\"list-"] {
                for (i, _) in text.match_indices(prefix) {
                    let rest = &text[i + 1..];
                    let id = &rest[..rest.find('"').unwrap()];
                    asked.push((path.file_name().unwrap().to_string_lossy().into_owned(), id.to_owned()));
                }
            }
        }
        assert!(asked.len() > 60, "{asked:?}");
        for lang in Lang::ALL {
            let page = page_messages(lang);
            for (file, id) in &asked {
                assert!(page.contains_key(id), "{file} asks for {id}, which {lang:?} lacks");
            }
        }
    }

    #[test]
    fn the_page_tests_read_the_catalog_as_it_is() {
        // ui/tests/texts.*.json give the node tests the real messages; they
        // are written from the catalog with LOCKWATCH_UPDATE_TEXTS=1.
        for lang in Lang::ALL {
            let path =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../ui/tests/texts.{}.json", lang.tag()));
            let want = serde_json::to_string_pretty(
                &serde_json::json!({ "lang": lang.tag(), "messages": page_messages(lang) }),
            )
            .unwrap()
                + "\n";
            kept_current(&path, &want);
        }
    }

    /// The file at `path` holds `want`: written so with LOCKWATCH_UPDATE_TEXTS=1,
    /// else checked.
    fn kept_current(path: &std::path::Path, want: &str) {
        if std::env::var_os("LOCKWATCH_UPDATE_TEXTS").is_some() {
            std::fs::write(path, want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "{} is stale: run LOCKWATCH_UPDATE_TEXTS=1 cargo test -p lockwatch-tray --lib i18n::",
            path.display()
        );
    }

    #[test]
    fn the_page_tests_read_the_librarys_words_as_they_are() {
        // ui/tests/library.json gives the node tests the events the settings
        // offer and the ends the history names, as the library has them.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/tests/library.json");
        let events: Vec<&str> = lockwatch::EventKind::ALL.iter().map(|k| k.as_str()).collect();
        let mut ends: Vec<&str> = Vec::new();
        for end in lockwatch::history::End::all() {
            if !ends.contains(&end.token()) {
                ends.push(end.token());
            }
        }
        let want = serde_json::to_string_pretty(&serde_json::json!({ "events": events, "ends": ends })).unwrap() + "\n";
        kept_current(&path, &want);
    }
}
