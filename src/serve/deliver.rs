//! Posting to a robot: the request signed as its kind wants, sent with
//! `ureq` (blocking, rustls with ring, so it runs in `spawn_blocking`),
//! the answer read as the robot means it ([`classify`]: only `errcode` or
//! `code` 0 is sent), and retried with backoff on network errors and the
//! robots' "too fast" codes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::robots::{Kind, Robot};
use super::sign;

/// What became of one post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// The robot took it (`errcode`/`code` 0, or a webhook's 2xx).
    Sent { said: String },
    /// The robot said "too fast" (DingTalk 130101, WeCom 45009, Feishu
    /// 11232, or HTTP 429): worth another try, later.
    TooFast { said: String },
    /// The robot refused it for good (a signature, key or token it does
    /// not accept, a message it will not take): one sentence why.
    Refused { sentence: String, said: String },
    /// No answer that counts (the network, a server error): worth another try.
    Failed { sentence: String },
}

impl Answer {
    /// Whether another try may go otherwise.
    pub fn retry(&self) -> bool {
        matches!(self, Answer::TooFast { .. } | Answer::Failed { .. })
    }

    /// What the robot answered, or why there was no answer, for `--check`.
    pub fn said(&self) -> &str {
        match self {
            Answer::Sent { said } | Answer::TooFast { said } | Answer::Refused { said, .. } => said,
            Answer::Failed { sentence } => sentence,
        }
    }
}

/// The robots' "too fast" codes.
const TOO_FAST: [i64; 3] = [130101, 45009, 11232];

/// Reads a robot's answer: HTTP `status` and `body`. Only a 2xx whose
/// `errcode` (DingTalk, WeCom) or `code` (Feishu; `StatusCode` on its old
/// API) is 0 counts as sent; a webhook's 2xx counts whatever it says.
pub fn classify(kind: Kind, status: u16, body: &str) -> Answer {
    let said: String = body.trim().chars().take(300).collect();
    let json: Option<Value> = serde_json::from_str(body).ok();
    let code = json.as_ref().and_then(|j| ["errcode", "code", "StatusCode"].iter().find_map(|k| j.get(k)?.as_i64()));
    let text = json
        .as_ref()
        .and_then(|j| ["errmsg", "msg", "StatusMessage"].iter().find_map(|k| Some(j.get(k)?.as_str()?.to_owned())))
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect::<String>();
    if status == 429 || code.is_some_and(|c| TOO_FAST.contains(&c)) {
        return Answer::TooFast { said };
    }
    if status >= 500 {
        return Answer::Failed { sentence: format!("it answered HTTP {status}") };
    }
    if !(200..300).contains(&status) {
        return Answer::Refused { sentence: format!("it answered HTTP {status} ({said}); check its url"), said };
    }
    if kind == Kind::Webhook {
        return Answer::Sent { said };
    }
    match code {
        Some(0) => Answer::Sent { said },
        Some(code) => Answer::Refused { sentence: format!("code {code}, \"{text}\"; {}", advice(kind, code)), said },
        None => Answer::Refused {
            sentence: format!("its answer has no errcode or code ({said}); is the url a {} robot's?", kind.as_str()),
            said,
        },
    }
}

/// What to do about a refusal, by the robots' documented codes.
fn advice(kind: Kind, code: i64) -> &'static str {
    match (kind, code) {
        (Kind::DingTalk, 310000) => {
            "check the robot's secret (sign) and its security settings (keywords, IP addresses)"
        }
        (Kind::DingTalk, 300001 | 400013 | 300005) => "check the access_token in its url",
        (Kind::WeCom, 93000 | 40008) => "check the key in its url",
        (Kind::Feishu, 19021) => "check the robot's secret (sign) and this server's clock",
        (Kind::Feishu, 19001 | 19002) => "check the hook id in its url",
        (Kind::Feishu, 19022 | 19024) => "check the robot's security settings (IP addresses, keywords)",
        _ => "see the robot's documentation for the code",
    }
}

/// The request for `body`, signed when the robot has a secret: DingTalk's
/// signature in the query, Feishu's in the body. `now`: the wall clock,
/// which the robots check the timestamp against.
pub fn signed(robot: &Robot, mut body: Value, now: SystemTime) -> (url::Url, Value) {
    let mut url = robot.url().clone();
    let ms = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
    match (robot.kind, robot.secret()) {
        (Kind::DingTalk, Some(secret)) => {
            url.query_pairs_mut()
                .append_pair("timestamp", &ms.to_string())
                .append_pair("sign", &sign::dingtalk(secret, ms));
        }
        (Kind::Feishu, Some(secret)) => {
            let secs = ms / 1000;
            if let Some(map) = body.as_object_mut() {
                map.insert("timestamp".into(), Value::String(secs.to_string()));
                map.insert("sign".into(), Value::String(sign::feishu(secret, secs)));
            }
        }
        _ => {}
    }
    (url, body)
}

/// One post of `body` to `robot`, blocking: for `spawn_blocking`.
pub fn post_once(agent: &ureq::Agent, robot: &Robot, body: Value) -> Answer {
    let (url, body) = signed(robot, body, SystemTime::now());
    let sent = agent
        .post(url.as_str())
        .header("Content-Type", "application/json; charset=utf-8")
        .send(body.to_string().as_bytes());
    let mut response = match sent {
        Ok(response) => response,
        Err(err) => return Answer::Failed { sentence: robot.scrub(&format!("it could not be reached ({err})")) },
    };
    let status = response.status().as_u16();
    let text = response.body_mut().with_config().limit(64 * 1024).read_to_string().unwrap_or_default();
    read_answer(robot, status, &text)
}

/// A robot's answer as lockwatch keeps it: its secrets cut from the whole
/// answer first, and only then the answer cut short (a token that straddled
/// the cut would no longer be found, and half of it would be shown).
fn read_answer(robot: &Robot, status: u16, text: &str) -> Answer {
    classify(robot.kind, status, &robot.scrub(text))
}

/// How long one request may take, all of it: a robot that hangs (takes a
/// request and never answers) costs a try this long, never more.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP client every robot shares: a whole request may take
/// [`REQUEST_TIMEOUT`]; a robot's error status is an answer to read, not an
/// error.
pub fn agent() -> ureq::Agent {
    agent_within(REQUEST_TIMEOUT)
}

/// [`agent`] with a whole request bounded by `timeout`.
pub fn agent_within(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .user_agent(concat!("lockwatch/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}

/// How often and how patiently to try.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Tries in all.
    pub tries: u32,
    /// The wait after the first failed try; doubled after each.
    pub first_wait: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        // 1 + 2 + 4 + 8 + 16 s: past DingTalk's and WeCom's minute window.
        Retry { tries: 6, first_wait: Duration::from_secs(1) }
    }
}

/// Posts `body` to `robot`, trying again with backoff while the answer
/// says another try may go otherwise; the last answer. `on_try` is told
/// of each try once it is over, so a rate limit counted from then holds
/// on the robot's side too (which counts from when the request came).
pub async fn post(agent: &ureq::Agent, robot: &Robot, body: Value, retry: Retry, mut on_try: impl FnMut()) -> Answer {
    let mut wait = retry.first_wait;
    let mut tries = 0;
    loop {
        tries += 1;
        let (agent, robot_, body_) = (agent.clone(), robot.clone(), body.clone());
        let answer = tokio::task::spawn_blocking(move || post_once(&agent, &robot_, body_))
            .await
            .unwrap_or_else(|e| Answer::Failed { sentence: format!("the post did not finish ({e})") });
        on_try();
        if !answer.retry() || tries >= retry.tries {
            return answer;
        }
        tracing::info!(robot = %robot.label, answer = %answer.said(), wait_ms = wait.as_millis() as u64, "trying again");
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_code_zero_is_sent() {
        let sent = |kind, body| matches!(classify(kind, 200, body), Answer::Sent { .. });
        assert!(sent(Kind::DingTalk, r#"{"errcode":0,"errmsg":"ok"}"#));
        assert!(sent(Kind::WeCom, r#"{"errcode":0,"errmsg":"ok"}"#));
        assert!(sent(Kind::Feishu, r#"{"code":0,"data":{},"msg":"success"}"#));
        assert!(sent(Kind::Feishu, r#"{"StatusCode":0,"StatusMessage":"success"}"#));
        assert!(sent(Kind::Webhook, "ok"));
        // A WeCom error in an HTTP 200 is no success.
        let refused = classify(Kind::WeCom, 200, r#"{"errcode":93000,"errmsg":"invalid webhook url"}"#);
        assert_eq!(
            refused,
            Answer::Refused {
                sentence: "code 93000, \"invalid webhook url\"; check the key in its url".into(),
                said: r#"{"errcode":93000,"errmsg":"invalid webhook url"}"#.into()
            }
        );
        assert!(!sent(Kind::DingTalk, "<html>proxy error</html>"));
    }

    #[test]
    fn a_huge_refusal_is_said_in_a_bounded_sentence() {
        let body = format!(r#"{{"errcode":310000,"errmsg":"{}"}}"#, "x".repeat(20_000));
        let Answer::Refused { sentence, said } = classify(Kind::DingTalk, 200, &body) else { panic!() };
        assert!(sentence.len() < 500 && said.len() <= 300, "{} and {} bytes", sentence.len(), said.len());
    }

    #[test]
    fn too_fast_and_server_errors_are_tried_again_refusals_not() {
        for (kind, body) in [
            (Kind::DingTalk, r#"{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}"#),
            (Kind::WeCom, r#"{"errcode":45009,"errmsg":"api freq out of limit"}"#),
            (Kind::Feishu, r#"{"code":11232,"msg":"frequency limited"}"#),
        ] {
            assert!(matches!(classify(kind, 200, body), Answer::TooFast { .. }), "{body}");
        }
        assert!(classify(Kind::Webhook, 503, "").retry());
        assert!(classify(Kind::Webhook, 429, "").retry());
        let bad_sign = classify(Kind::DingTalk, 200, r#"{"errcode":310000,"errmsg":"sign not match"}"#);
        assert!(!bad_sign.retry());
        assert!(matches!(&bad_sign, Answer::Refused { sentence, .. } if sentence.contains("check the robot's secret")));
    }

    /// A robot that takes each request and never answers: every try ends
    /// at the request's timeout, and the tries end after their number.
    #[tokio::test]
    async fn a_robot_that_hangs_costs_each_try_its_timeout_and_no_more_tries() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = accepted.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                held.push(stream);
            }
        });
        let text = format!("[[robot]]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:{port}/hook\"\n");
        let robot = super::super::robots::parse(&text, |_| None).unwrap().remove(0);
        let retry = Retry { tries: 3, first_wait: Duration::from_millis(50) };
        let started = std::time::Instant::now();
        let answer = post(&agent_within(Duration::from_millis(300)), &robot, Value::Null, retry, || {}).await;
        let took = started.elapsed();
        assert!(matches!(answer, Answer::Failed { .. }), "{answer:?}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::Relaxed), 3, "three tries, then given up");
        // 3 × 300 ms, 50 + 100 ms between.
        assert!(took >= Duration::from_millis(1_000) && took < Duration::from_millis(2_500), "{took:?}");
    }

    fn robot(kind: &str, url: &str) -> Robot {
        let text = format!("[[robot]]\nkind = \"{kind}\"\nurl = \"{url}\"\nsecret = \"SEC0123456789abcdef\"\n");
        super::super::robots::parse(&text, |_| None).unwrap().remove(0)
    }

    #[test]
    fn a_token_the_answer_echoes_is_cut_whole_even_where_the_answer_is_cut_short() {
        let dingtalk = "https://oapi.dingtalk.com/robot/send?access_token=dtTOKEN123456789";
        let wecom = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=wcKEY-abcdef";
        let hook = "https://hooks.example/hook/whTOKEN77777";
        let webhook = format!("[[robot]]\nkind = \"webhook\"\nurl = \"{hook}\"\n");
        let cases = [
            (robot("dingtalk", dingtalk), dingtalk, "dtTOKEN12345"),
            (robot("wecom", wecom), wecom, "wcKEY-abc"),
            (super::super::robots::parse(&webhook, |_| None).unwrap().remove(0), hook, "whTOKEN77"),
        ];
        for (r, url, part) in cases {
            for pad in 0..300 {
                let body = format!("<html>{} Forbidden by proxy: POST {url}</html>", "x".repeat(pad));
                let answer = read_answer(&r, 403, &body);
                let sentence = match &answer {
                    Answer::Refused { sentence, .. } | Answer::Failed { sentence } => sentence.as_str(),
                    _ => "",
                };
                assert!(!answer.said().contains(part) && !sentence.contains(part), "pad {pad}: {sentence}");
            }
        }
    }

    #[test]
    fn dingtalk_signs_in_the_query_and_feishu_in_the_body() {
        let at = UNIX_EPOCH + Duration::from_millis(1_700_000_000_000);
        let (url, _) =
            signed(&robot("dingtalk", "https://oapi.dingtalk.com/robot/send?access_token=t0k3n"), Value::Null, at);
        assert_eq!(
            url.query(),
            Some("access_token=t0k3n&timestamp=1700000000000&sign=TSZbRFUuvaSQaRKUpF970OPCb2%2FLcQAP3wOvwZIzBZk%3D")
        );
        let (url, body) =
            signed(&robot("feishu", "https://open.feishu.cn/open-apis/bot/v2/hook/abc"), serde_json::json!({}), at);
        assert_eq!(url.query(), None);
        assert_eq!(body["timestamp"], "1700000000");
        assert_eq!(body["sign"], sign::feishu("SEC0123456789abcdef", 1_700_000_000));
    }
}
