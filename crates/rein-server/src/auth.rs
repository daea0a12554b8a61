//! The guards every request passes: the `Host` it names, the `Origin` of
//! a state-changing request, and who it is — the session cookie a
//! one-time login URL gave, or the bearer token. Nothing else lets a
//! request in.
//!
//! Why each: a page on another site can make a browser send requests to
//! loopback (refused by `Origin`), and can rebind its own name to
//! 127.0.0.1 (refused by `Host`); the cookie is `HttpOnly` (no script
//! reads it) and `SameSite=Strict` (no other site's request carries it).
//! Secrets are compared in constant time.
//!
//! Not here: what a route does (`routes`).

use std::net::SocketAddr;
use std::sync::Mutex;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use rein_wire::{AgentError, error::codes};

use crate::Server;
use crate::connections::Peer;
use crate::problem::Problem;

/// The session cookie's name for a server bound to `addr` (one per port:
/// cookies do not tell ports apart, so two servers on one host would
/// otherwise overwrite each other's).
pub(crate) fn cookie_name(addr: SocketAddr) -> String {
    format!("rein_session_{}", addr.port())
}

/// A server's secrets: a one-time login token (for the URL a person
/// opens), the cookie it is exchanged for, and a bearer token (for
/// scripts).
#[derive(Debug)]
pub struct Secrets {
    login: Mutex<Option<String>>,
    cookie: String,
    bearer: String,
}

impl Clone for Secrets {
    fn clone(&self) -> Self {
        Secrets {
            login: Mutex::new(self.login.lock().unwrap_or_else(|p| p.into_inner()).clone()),
            cookie: self.cookie.clone(),
            bearer: self.bearer.clone(),
        }
    }
}

fn random_hex() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Secrets {
    pub(crate) fn fresh() -> Secrets {
        Secrets {
            login: Mutex::new(Some(random_hex())),
            cookie: random_hex(),
            bearer: random_hex(),
        }
    }

    /// These secrets with `token` as the bearer token.
    pub(crate) fn with_bearer(&self, token: &str) -> Secrets {
        Secrets {
            bearer: token.to_owned(),
            ..self.clone()
        }
    }

    /// The one-time login token, while unused.
    pub fn login_token(&self) -> Option<String> {
        self.login.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The bearer token (`Authorization: Bearer …`).
    pub fn bearer(&self) -> &str {
        &self.bearer
    }

    /// Exchange the one-time token for the cookie's value (once).
    pub(crate) fn exchange(&self, token: &str) -> Option<String> {
        let mut login = self.login.lock().unwrap_or_else(|p| p.into_inner());
        match login.as_deref() {
            Some(expected) if same(expected, token) => {
                *login = None;
                Some(self.cookie.clone())
            }
            _ => None,
        }
    }
}

use rein_wire::secrets::same_secret as same;

/// The `Host` values a server bound to `addr` answers to.
pub(crate) fn hosts_for(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    let own = addr.to_string();
    if !hosts.contains(&own) {
        hosts.push(own);
    }
    // Bound to every interface: the machine's own addresses are its names
    // too (any other name is still refused: DNS rebinding).
    if addr.ip().is_unspecified() {
        for ip in interface_addresses() {
            let name = std::net::SocketAddr::new(ip, port).to_string();
            if ip.is_ipv4() == addr.is_ipv4() && !hosts.contains(&name) {
                hosts.push(name);
            }
        }
    }
    hosts
}

/// The machine's own IP addresses, by its interfaces.
fn interface_addresses() -> Vec<std::net::IpAddr> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    interfaces
        .filter_map(|i| i.address)
        .filter_map(|a| {
            a.as_sockaddr_in()
                .map(|v4| std::net::IpAddr::V4(v4.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|v6| std::net::IpAddr::V6(v6.ip())))
        })
        .collect()
}

/// Who a request is, by its credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    /// The page, by its cookie.
    Cookie,
    /// A script, by the bearer token.
    Bearer,
}

impl Caller {
    /// Who decided, for the log: the page's person or a script's token.
    pub(crate) fn surface(self) -> rein_approvals::Surface {
        match self {
            Caller::Cookie => rein_approvals::Surface::http("page"),
            Caller::Bearer => rein_approvals::Surface::http("token"),
        }
    }
}

fn cookie_of<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(cookie, _)| *cookie == name)
        .map(|(_, value)| value)
}

fn caller(server: &Server, headers: &HeaderMap) -> Option<Caller> {
    let secrets = &server.inner.secrets;
    if let Some(value) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            // The scheme is case-insensitive (RFC 9110).
            let (scheme, token) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(token)
        })
    {
        return same(value.trim(), &secrets.bearer).then_some(Caller::Bearer);
    }
    cookie_of(headers, &server.inner.cookie)
        .filter(|value| same(value, &secrets.cookie))
        .map(|_| Caller::Cookie)
}

/// The guard: `Host`, then `Origin` for a state-changing request, then
/// the credentials (the login exchange itself needs none).
pub(crate) async fn guard(
    State(server): State<Server>,
    request: Request,
    next: Next,
) -> Result<Response, Problem> {
    // A place among the requests served at once, held until the answer's
    // body ends (an event stream holds it while it is open).
    let Ok(place) = server.places.clone().try_acquire_owned() else {
        let problem = Problem(AgentError::new(
            codes::TOO_MANY_CLIENTS,
            format!(
                "the server answers {} requests at once",
                server.limits.requests
            ),
        ));
        // The connection goes too: kept alive, a refused client would hold
        // a connection place until its idle bound, and a crowd of them
        // would keep clients that could be served waiting in the backlog.
        return Ok(closing(problem));
    };
    // A caller refused (no credentials, another host, a foreign page)
    // keeps no connection open either.
    let response = match checked(server, request, next).await {
        Ok(response) => response,
        Err(problem) => return Ok(closing(problem)),
    };
    let (parts, body) = response.into_parts();
    let mut chunks = body.into_data_stream();
    let held = async_stream::stream! {
        let _place = place;
        while let Some(chunk) = futures::StreamExt::next(&mut chunks).await {
            yield chunk;
        }
    };
    Ok(Response::from_parts(
        parts,
        axum::body::Body::from_stream(held),
    ))
}

/// `problem` as the answer, closing its connection.
fn closing(problem: Problem) -> Response {
    let mut refused = axum::response::IntoResponse::into_response(problem);
    refused.headers_mut().insert(
        header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    refused
}

async fn checked(server: Server, mut request: Request, next: Next) -> Result<Response, Problem> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !server.inner.hosts.iter().any(|h| h == host) {
        return Err(Problem(AgentError::new(
            codes::HOST_REFUSED,
            format!("this server does not answer to the host `{host}`"),
        )));
    }
    let changes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let own_origin = origin.is_some_and(|o| {
        o.strip_prefix("http://")
            .is_some_and(|h| server.inner.hosts.iter().any(|own| own == h))
    });
    if changes && origin.is_some() && !own_origin {
        return Err(Problem(AgentError::new(
            codes::ORIGIN_REFUSED,
            format!(
                "a request from `{}` may not change anything here",
                origin.unwrap_or_default()
            ),
        )));
    }
    if request.uri().path() == "/api/login" {
        // A person who logs in is a caller from now on.
        let peer = request.extensions().get::<ConnectInfo<Peer>>().cloned();
        let response = next.run(request).await;
        if response.status().is_redirection()
            && let Some(ConnectInfo(peer)) = peer
        {
            peer.trusted();
        }
        return Ok(response);
    }
    match caller(&server, headers) {
        // A browser's state-changing request must say where it comes from.
        Some(Caller::Cookie) if changes && !own_origin => Err(Problem(AgentError::new(
            codes::ORIGIN_REFUSED,
            "a change from the page must carry this server's Origin",
        ))),
        Some(who) => {
            Peer::trust(&request);
            request.extensions_mut().insert(who);
            Ok(next.run(request).await)
        }
        None => Err(Problem(AgentError::new(
            codes::UNAUTHENTICATED,
            "no valid session cookie or bearer token",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_to_every_interface_the_machines_own_addresses_are_its_names() {
        let any: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        let hosts = hosts_for(any);
        let own: Vec<String> = interface_addresses()
            .into_iter()
            .filter(std::net::IpAddr::is_ipv4)
            .map(|ip| format!("{ip}:8080"))
            .collect();
        assert!(!own.is_empty(), "this machine has an IPv4 address");
        for name in &own {
            assert!(hosts.contains(name), "{name} not in {hosts:?}");
        }
        assert!(!hosts.iter().any(|h| h.starts_with("evil.example")));
        // Bound to loopback, no interface address is a name.
        let local = hosts_for("127.0.0.1:8080".parse().expect("addr"));
        assert!(
            own.iter()
                .filter(|n| !n.starts_with("127."))
                .all(|n| !local.contains(n))
        );
    }
}
