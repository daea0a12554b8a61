//! [`FakeH2Server`]: a model server's stand-in that speaks HTTP/2 over TLS
//! on loopback, so a test can reset a stream where a real server or proxy
//! would — before the headers, or mid-body — which a plain HTTP/1.1
//! stand-in ([`crate::FakeServer`]) cannot.
//!
//! Each run makes its own certificate authority and server certificate
//! (for `127.0.0.1` and `localhost`); the client trusts it through the
//! authority's PEM ([`FakeH2Server::ca_pem`]). The server offers only `h2`
//! and counts only requests that arrived over HTTP/2, so a client that
//! stopped speaking it is noticed.
//!
//! Not a general HTTP/2 server: one scripted reply per request, in order.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use h2::Reason;

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum H2Reply {
    /// `200`, `text/event-stream`, this body, then the stream's end.
    Sse(String),
    /// The stream reset with `reason` (`RST_STREAM`): before any headers
    /// when `sent` is `None`; otherwise after a `200` and `sent` reached
    /// the client.
    Reset {
        /// What is sent before the reset.
        sent: Option<String>,
        /// The reset's error code.
        reason: Reason,
    },
}

/// The stand-in; stops when dropped.
pub struct FakeH2Server {
    addr: SocketAddr,
    ca_pem: String,
    requests: Arc<Mutex<usize>>,
    task: JoinHandle<()>,
}

/// How long the server waits between a body's data and the reset, so the
/// data is on the wire first (h2 drops what is queued for a stream it
/// resets).
const BEFORE_RESET: Duration = Duration::from_millis(300);

impl FakeH2Server {
    /// Start on an ephemeral loopback port, answering requests with
    /// `replies` in order (a `500` reset past the end).
    pub async fn start(replies: Vec<H2Reply>) -> std::io::Result<FakeH2Server> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (ca_pem, config) = tls().map_err(std::io::Error::other)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let requests = Arc::new(Mutex::new(0));
        let script = Arc::new(Mutex::new(replies.into_iter()));
        let counted = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let script = script.clone();
                let counted = counted.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let Ok(mut conn) = h2::server::handshake(tls).await else {
                        return;
                    };
                    while let Some(Ok((request, mut respond))) = conn.accept().await {
                        // A `GET` (a client asking the server's window) is
                        // no model call: 404, neither counted nor scripted.
                        if request.method() == http::Method::GET {
                            if let Ok(res) = http::Response::builder().status(404).body(()) {
                                let _ = respond.send_response(res, true);
                            }
                            continue;
                        }
                        if let Ok(mut n) = counted.lock() {
                            *n += 1;
                        }
                        let reply = script.lock().ok().and_then(|mut s| s.next());
                        tokio::spawn(answer(request, respond, reply));
                    }
                });
            }
        });
        Ok(FakeH2Server {
            addr,
            ca_pem,
            requests,
            task,
        })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The PEM of the authority that signed the server's certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// How many requests arrived over HTTP/2.
    pub fn requests(&self) -> usize {
        self.requests.lock().map_or(0, |n| *n)
    }
}

impl Drop for FakeH2Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A fresh authority and a server certificate it signed, as the authority's
/// PEM and the server's TLS config (ALPN `h2` alone).
fn tls() -> Result<(String, rustls::ServerConfig), Box<dyn std::error::Error + Send + Sync>> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
    let key = KeyPair::generate()?;
    let params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
    let cert = params.signed_by(&key, &ca)?;
    let chain = vec![
        CertificateDer::from(cert.der().to_vec()),
        CertificateDer::from(ca.der().to_vec()),
    ];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok((ca.pem(), config))
}

/// Read the request's body, then do what `reply` says.
async fn answer(
    request: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    reply: Option<H2Reply>,
) {
    let mut body = request.into_body();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let ok = || {
        http::Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .body(())
    };
    match reply {
        None => {
            if let Ok(res) = http::Response::builder().status(500).body(()) {
                let _ = respond.send_response(res, true);
            }
        }
        Some(H2Reply::Sse(text)) => {
            if let Ok(res) = ok()
                && let Ok(mut stream) = respond.send_response(res, false)
            {
                let _ = stream.send_data(Bytes::from(text), true);
            }
        }
        Some(H2Reply::Reset { sent: None, reason }) => respond.send_reset(reason),
        Some(H2Reply::Reset {
            sent: Some(text),
            reason,
        }) => {
            if let Ok(res) = ok()
                && let Ok(mut stream) = respond.send_response(res, false)
            {
                let _ = stream.send_data(Bytes::from(text), false);
                tokio::time::sleep(BEFORE_RESET).await;
                stream.send_reset(reason);
            }
        }
    }
}
