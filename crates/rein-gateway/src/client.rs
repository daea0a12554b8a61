//! The HTTP client a provider calls through: reqwest on hyper with rustls
//! and the ring crypto provider (no OpenSSL), HTTP/2 where the server
//! offers it over TLS, trusting the system's roots and a config's
//! `extra_roots`.
//!
//! Not here: the call itself, its retries and timeouts (`http_provider`).

use rein_wire::{AgentError, error::codes};

use crate::config::ProviderConfig;

/// The client for `config`. A certificate of `extra_roots` that is not PEM
/// is refused with `config_invalid`, naming which.
pub(crate) fn build(config: &ProviderConfig) -> Result<reqwest::Client, AgentError> {
    // Installing twice is harmless: the first install wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .tls_backend_rustls()
        .connect_timeout(config.timeouts.connect);
    for (i, pem) in config.extra_roots.iter().enumerate() {
        for cert in pem_certificates(pem).ok_or_else(|| {
            AgentError::new(
                codes::CONFIG_INVALID,
                "a trusted certificate of the provider's config is not a PEM certificate",
            )
            .with_field("extra_root", i)
        })? {
            builder = builder.add_root_certificate(cert);
        }
    }
    builder.build().map_err(|err| {
        AgentError::new(
            codes::INTERNAL,
            format!("could not build the HTTP client: {}", err.without_url()),
        )
    })
}

/// The certificates of a PEM text, parsed now (the client would only find
/// a bad one when built, without saying which); `None` when any block is
/// not a certificate's or there is none.
fn pem_certificates(pem: &str) -> Option<Vec<reqwest::Certificate>> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let ders: Vec<CertificateDer<'_>> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .ok()?;
    if ders.is_empty() {
        return None;
    }
    ders.iter()
        .map(|der| reqwest::Certificate::from_der(der).ok())
        .collect()
}
