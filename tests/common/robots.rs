//! Chat robots on loopback, answering as DingTalk's, WeCom's and Feishu's
//! group robots document their APIs: the token or key in the URL, the
//! signature checked exactly as each service describes it (computed here
//! apart from lockwatch's own code), the rate limits kept (too fast: the
//! real code), and the real success and error answers. A webhook takes
//! anything. Each keeps every request it got, with when; one can be told
//! to hang (read a request and never answer it).
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use ring::hmac;
use serde_json::Value;

pub const TOKEN: &str = "t0ken5ecret0123456789abcdef";
pub const SECRET: &str = "SECd1ngtalk5ecret0123456789";

/// Which robot to play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Play {
    DingTalk,
    WeCom,
    Feishu,
    Webhook,
}

/// One request a robot got.
#[derive(Debug, Clone)]
pub struct Got {
    pub at: Instant,
    /// Wall clock, ms since the epoch: to compare with Redis time.
    pub at_ms: u64,
    /// Path and query.
    pub target: String,
    pub body: Value,
    /// What it answered.
    pub answer: String,
}

impl Got {
    /// Whether the robot took it (its answer's code is 0).
    pub fn taken(&self) -> bool {
        let a: Value = serde_json::from_str(&self.answer).unwrap_or(Value::Null);
        a.get("errcode").or_else(|| a.get("code")).and_then(Value::as_i64) == Some(0) || self.answer == "ok"
    }

    /// The message's text, whatever the kind.
    pub fn text(&self) -> String {
        let b = &self.body;
        [
            &b["markdown"]["text"],
            &b["markdown"]["content"],
            &b["text"]["content"],
            &b["card"]["header"]["title"]["content"],
        ]
        .iter()
        .filter_map(|v| v.as_str())
        .chain(b["card"]["elements"].as_array().into_iter().flatten().filter_map(|e| e["text"]["content"].as_str()))
        .collect::<Vec<_>>()
        .join("\n")
    }
}

/// A robot on a loopback port, until dropped.
pub struct Robot {
    pub play: Play,
    pub port: u16,
    got: Arc<Mutex<Vec<Got>>>,
    /// Answers given instead of the real one, first come first.
    forced: Arc<Mutex<VecDeque<String>>>,
    /// How many of the next requests it reads and never answers (as a
    /// robot that hangs), holding the connection until dropped.
    hang: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Robot {
    pub fn start(play: Play) -> Robot {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let robot = Robot {
            play,
            port,
            got: Arc::default(),
            forced: Arc::default(),
            hang: Arc::default(),
            stop: Arc::default(),
        };
        let (got, forced, hang, stop) =
            (robot.got.clone(), robot.forced.clone(), robot.hang.clone(), robot.stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (got, forced, hang, stop) = (got.clone(), forced.clone(), hang.clone(), stop.clone());
                        std::thread::spawn(move || serve(play, stream, &got, &forced, &hang, &stop));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        robot
    }

    /// The URL its robots file names: with the token or key.
    pub fn url(&self) -> String {
        let p = self.port;
        match self.play {
            Play::DingTalk => format!("http://127.0.0.1:{p}/robot/send?access_token={TOKEN}"),
            Play::WeCom => format!("http://127.0.0.1:{p}/cgi-bin/webhook/send?key={TOKEN}"),
            Play::Feishu => format!("http://127.0.0.1:{p}/open-apis/bot/v2/hook/{TOKEN}"),
            Play::Webhook => format!("http://127.0.0.1:{p}/lockwatch"),
        }
    }

    /// Answers the next request with `answer` instead.
    pub fn force(&self, answer: &str) {
        self.forced.lock().unwrap().push_back(answer.to_owned());
    }

    /// Reads the next `n` requests and never answers them (each is kept,
    /// with an empty answer), as a robot that hangs.
    pub fn hang(&self, n: usize) {
        self.hang.store(n, Ordering::Relaxed);
    }

    /// The requests it read and never answered.
    pub fn hung(&self) -> Vec<Got> {
        self.got().into_iter().filter(|g| g.answer.is_empty()).collect()
    }

    pub fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    /// The requests it took (code 0).
    pub fn taken(&self) -> Vec<Got> {
        self.got().into_iter().filter(Got::taken).collect()
    }
}

impl Drop for Robot {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn serve(
    play: Play,
    stream: TcpStream,
    got: &Mutex<Vec<Got>>,
    forced: &Mutex<VecDeque<String>>,
    hang: &AtomicUsize,
    stop: &AtomicBool,
) {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let target = line.split(' ').nth(1).unwrap_or_default().to_owned();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if hang.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok() {
        got.lock().unwrap().push(Got { at: Instant::now(), at_ms: now_ms(), target, body, answer: String::new() });
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
        return;
    }
    let mut got = got.lock().unwrap();
    let at = Instant::now();
    let forced = forced.lock().unwrap().pop_front();
    let answer = forced.unwrap_or_else(|| answer(play, &target, &body, &got, at));
    got.push(Got { at, at_ms: now_ms(), target, body, answer: answer.clone() });
    drop(got);
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    let _ = stream.flush();
}

/// Requests taken within the last `ms` before `at`.
fn taken_within(got: &[Got], at: Instant, ms: u64) -> usize {
    got.iter().filter(|g| g.taken() && at.duration_since(g.at) < Duration::from_millis(ms)).count()
}

fn query(target: &str) -> Vec<(String, String)> {
    let query = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
    url::form_urlencoded::parse(query.as_bytes()).into_owned().collect()
}

fn hmac_b64(key: &[u8], message: &[u8]) -> String {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), message);
    base64::engine::general_purpose::STANDARD.encode(tag.as_ref())
}

/// The robot's answer, as its API documents it.
fn answer(play: Play, target: &str, body: &Value, got: &[Got], at: Instant) -> String {
    let path = target.split('?').next().unwrap_or_default();
    let q = query(target);
    let param = |name: &str| q.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    match play {
        Play::DingTalk => {
            if path != "/robot/send" || param("access_token").as_deref() != Some(TOKEN) {
                return r#"{"errcode":300001,"errmsg":"token is not exist"}"#.into();
            }
            // https://open.dingtalk.com/document/robots/customize-robot-security-settings
            let (Some(ts), Some(sign)) = (param("timestamp"), param("sign")) else {
                return r#"{"errcode":310000,"errmsg":"sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]"}"#.into();
            };
            let fresh = ts.parse::<u64>().is_ok_and(|t| now_ms().abs_diff(t) < 3_600_000);
            if !fresh || sign != hmac_b64(SECRET.as_bytes(), format!("{ts}\n{SECRET}").as_bytes()) {
                return r#"{"errcode":310000,"errmsg":"sign not match, more: [https://ding-doc.dingtalk.com/doc#/serverapi2/qf2nxq]"}"#.into();
            }
            if taken_within(got, at, 60_000) >= 20 {
                return r#"{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}"#.into();
            }
            let ok = match body["msgtype"].as_str() {
                Some("markdown") => body["markdown"]["title"].is_string() && body["markdown"]["text"].is_string(),
                Some("text") => body["text"]["content"].is_string(),
                _ => false,
            };
            if !ok {
                return r#"{"errcode":40035,"errmsg":"缺少参数 json"}"#.into();
            }
            r#"{"errcode":0,"errmsg":"ok"}"#.into()
        }
        Play::WeCom => {
            if path != "/cgi-bin/webhook/send" || param("key").as_deref() != Some(TOKEN) {
                return r#"{"errcode":93000,"errmsg":"invalid webhook url, hint: [1700000000_1_abcdef], from ip: 127.0.0.1, more info at https://open.work.weixin.qq.com/devtool/query?e=93000"}"#.into();
            }
            if taken_within(got, at, 60_000) >= 20 {
                return r#"{"errcode":45009,"errmsg":"api freq out of limit"}"#.into();
            }
            let ok = match body["msgtype"].as_str() {
                Some("markdown") => body["markdown"]["content"].is_string(),
                Some("text") => body["text"]["content"].is_string(),
                _ => false,
            };
            if ok { r#"{"errcode":0,"errmsg":"ok"}"# } else { r#"{"errcode":40008,"errmsg":"invalid message type"}"# }
                .into()
        }
        Play::Feishu => {
            if path != format!("/open-apis/bot/v2/hook/{TOKEN}") {
                return r#"{"code":19001,"data":{},"msg":"param invalid: incoming webhook access token invalid"}"#
                    .into();
            }
            // https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot: the key is
            // "timestamp\nsecret", the message empty.
            let ts = body["timestamp"].as_str().unwrap_or_default();
            let fresh = ts.parse::<u64>().is_ok_and(|t| (now_ms() / 1000).abs_diff(t) < 3600);
            let sign = body["sign"].as_str().unwrap_or_default();
            if !fresh || sign != hmac_b64(format!("{ts}\n{SECRET}").as_bytes(), b"") {
                return r#"{"code":19021,"data":{},"msg":"sign match fail or timestamp is not within one hour from current time"}"#.into();
            }
            if taken_within(got, at, 1_000) >= 5 || taken_within(got, at, 60_000) >= 100 {
                return r#"{"code":11232,"data":{},"msg":"frequency limited psm[lark.oapi.app_platform_runtime]appID[1]"}"#.into();
            }
            if body["msg_type"] != "interactive" || !body["card"]["elements"].is_array() {
                return r#"{"code":19002,"data":{},"msg":"params error, msg_type need"}"#.into();
            }
            r#"{"code":0,"data":{},"msg":"success"}"#.into()
        }
        Play::Webhook => "ok".into(),
    }
}
