//! The certificate authorities genai trusts besides the well-known ones built in: the system's
//! bundle (`SSL_CERT_FILE`, else the distribution's file that `openssl-probe` finds), so that
//! HTTPS works behind a proxy that re-signs it, as it does at many workplaces; and the same
//! roots for the rustls clients of the shared database and Redis ([`rustls_roots`]).
//!
//! The bundle is read once per process and only for clients that speak HTTPS: parsing it costs
//! milliseconds (about 9 ms for Debian's 150 authorities) that a request to a local server
//! over plain HTTP must not pay. The folder of hashed links beside it (`SSL_CERT_DIR`) is not
//! read: it holds the same certificates, one file each, at three times the cost. This module
//! owns no client and never reaches the network.

use std::path::PathBuf;
use std::sync::OnceLock;

static SYSTEM: OnceLock<Vec<reqwest::Certificate>> = OnceLock::new();

/// `builder` trusting the system's authorities too.
pub fn with_system_roots(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    SYSTEM
        .get_or_init(load)
        .iter()
        .fold(builder, |b, cert| b.add_root_certificate(cert.clone()))
}

/// The system's bundle: `SSL_CERT_FILE` when set, else the distribution's file.
fn bundle() -> Option<PathBuf> {
    std::env::var_os("SSL_CERT_FILE")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| openssl_probe::probe().cert_file)
}

fn load() -> Vec<reqwest::Certificate> {
    let Some(path) = bundle() else {
        return Vec::new();
    };
    let read = std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|pem| reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| e.to_string()));
    read.unwrap_or_else(|e| {
        tracing::warn!(
            "cannot read the system's certificates from {}: {e}; trusting the built-in ones only",
            path.display()
        );
        Vec::new()
    })
}

/// The roots a TLS connection to the shared database or Redis trusts: the well-known
/// authorities, the system's bundle (as HTTPS), and the PEM certificates in `extra` (a
/// Postgres URL's `sslrootcert`, a private authority's). An unreadable `extra` is an error
/// naming it; the bundle unreadable is warned about, as for HTTPS.
pub fn rustls_roots(extra: Option<&std::path::Path>) -> Result<rustls::RootCertStore, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let pems = |path: &std::path::Path| -> Result<Vec<CertificateDer<'static>>, String> {
        let read = CertificateDer::pem_file_iter(path).and_then(|certs| certs.collect());
        read.map_err(|e| format!("cannot read certificates from {}: {e}", path.display()))
    };
    if let Some(bundle) = bundle() {
        match pems(&bundle) {
            Ok(certs) => _ = roots.add_parsable_certificates(certs),
            Err(e) => tracing::warn!("{e}; trusting the built-in authorities only"),
        }
    }
    if let Some(extra) = extra {
        let certs = pems(extra)?;
        if certs.is_empty() {
            return Err(format!("{} holds no PEM certificate", extra.display()));
        }
        let (_, refused) = roots.add_parsable_certificates(certs);
        if refused > 0 {
            return Err(format!(
                "{} holds a certificate that does not parse",
                extra.display()
            ));
        }
    }
    Ok(roots)
}
