//! A headless Chromium driven over WebDriver for the page's tests
//! (Debian's `chromium` and `chromium-driver`, installed here when
//! missing): log in, click, type, wait for a condition, read the page,
//! take a screenshot (to `target/browser/`). It leaves nothing running:
//! the driver and the browser end together with the test's handle.
//!
//! The WebDriver calls are a dozen JSON requests over loopback, written
//! here on reqwest: the maintained client crate's TLS stack would build
//! aws-lc from C for a protocol this test speaks in plain HTTP.

use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

/// Debian's Chromium and its driver, installed when missing.
fn ensure_chromium() {
    let present = [
        Path::new("/usr/bin/chromedriver"),
        Path::new("/usr/bin/chromium"),
    ];
    assert!(
        rein_testing::debian::ensure(&["chromium", "chromium-driver"], &present),
        "apt-get install chromium chromium-driver failed"
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A ChromeDriver process and one headless browser session in it.
pub(crate) struct Browser {
    driver: Child,
    http: reqwest::Client,
    base: String,
    _profile: tempfile::TempDir,
}

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    /// Log in to the page at `addr` with `login` and start a conversation.
    pub(crate) async fn new_conversation(&self, addr: SocketAddr, login: &str) {
        self.go(&format!("http://{addr}/api/login?token={login}"))
            .await;
        self.until("document.querySelector('#new')", "the page")
            .await;
        self.click("#new").await;
        self.until("location.hash.length > 1", "a conversation")
            .await;
    }

    pub(crate) async fn start() -> Browser {
        ensure_chromium();
        let port = free_port();
        // Its own process group, which the browser it starts joins: both
        // end together ([`Drop`]), nothing left running after a test.
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let http = reqwest::Client::new();
        let root = format!("http://127.0.0.1:{port}");
        let until = Instant::now() + Duration::from_secs(30);
        while http.get(format!("{root}/status")).send().await.is_err() {
            assert!(Instant::now() < until, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let args = vec![
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--no-first-run".to_owned(),
            "--window-size=1100,800".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let created: Value = http
            .post(format!("{root}/session"))
            .json(&json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args}
            }}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {created}"))
            .to_owned();
        Browser {
            driver,
            http,
            base: format!("{root}/session/{session}"),
            _profile: profile,
        }
    }

    pub(crate) async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => self.http.get(url),
            _ => self.http.post(url).json(&body),
        };
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        assert!(
            answer["value"].get("error").is_none(),
            "{method} {path}: {answer}"
        );
        answer["value"].clone()
    }

    pub(crate) async fn go(&self, url: &str) {
        self.call("POST", "/url", json!({"url": url})).await;
    }

    pub(crate) async fn script(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
        .await
    }

    /// Wait until `condition` (a JS expression) is true.
    pub(crate) async fn until(&self, condition: &str, what: &str) {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if self.script(&format!("return !!({condition});")).await == json!(true) {
                return;
            }
            if Instant::now() > until {
                let shown = self.script("return document.body.innerText;").await;
                panic!("never {what}; the page shows:\n{shown}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The text of the one item of the list `items` (a selector), once it
    /// shows exactly one (`what` names it if it never does).
    pub(crate) async fn only_item_text(&self, items: &str, what: &str) -> String {
        self.until(
            &format!("document.querySelectorAll('{items} li').length === 1"),
            what,
        )
        .await;
        let text = self
            .script(&format!(
                "return document.querySelector('{items} li .text').innerText;"
            ))
            .await;
        text.as_str().unwrap().to_owned()
    }

    /// Markup in `section` was shown as text, never run: no image there and
    /// the page's title as it was.
    pub(crate) async fn ran_no_markup_in(&self, section: &str) {
        let images = self
            .script(&format!(
                "return document.querySelectorAll('{section} img').length + ':' + document.title;"
            ))
            .await;
        assert_eq!(images, "0:rein");
    }

    async fn element(&self, css: &str) -> String {
        let found = self
            .call(
                "POST",
                "/element",
                json!({"using": "css selector", "value": css}),
            )
            .await;
        found[ELEMENT].as_str().unwrap().to_owned()
    }

    pub(crate) async fn click(&self, css: &str) {
        let id = self.element(css).await;
        self.call("POST", &format!("/element/{id}/click"), json!({}))
            .await;
    }

    pub(crate) async fn type_in(&self, css: &str, text: &str) {
        let id = self.element(css).await;
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            json!({"text": text}),
        )
        .await;
    }

    pub(crate) async fn screenshot(&self, name: &str) {
        let png = self.call("GET", "/screenshot", Value::Null).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        let dir = artifacts();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), bytes).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The driver's whole group: the browser and its helpers too.
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn artifacts() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/browser")
}
