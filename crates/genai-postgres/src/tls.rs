//! How `genai serve` reaches Postgres: plain, or over TLS with the server's certificate
//! verified. A URL's `sslmode` and `sslrootcert` are read as libpq names them, with one
//! difference, on purpose: `require` verifies the certificate and the host name as
//! `verify-full` does (a TLS connection to anyone who answers protects no password), and
//! `prefer` or `allow` connect in plain, as `disable`.
//!
//! It owns the reading of those two settings and the connector; it never logs the URL.

use std::path::PathBuf;

use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod};
use genai_core::error::{Error, ErrorKind, Result};
use tokio_postgres::config::SslMode;

/// The TLS settings of a `[store] url`, and the URL left for tokio-postgres (which knows
/// `sslmode` as disable, prefer or require only, and no `sslrootcert`).
#[derive(Debug, PartialEq)]
pub(crate) struct Settings {
    pub(crate) url: String,
    tls: bool,
    root: Option<PathBuf>,
}

impl Settings {
    pub(crate) fn read(url: &str) -> Settings {
        let Some((base, query)) = url.split_once('?') else {
            return Settings {
                url: url.into(),
                tls: false,
                root: None,
            };
        };
        let (mut tls, mut root, mut kept) = (false, None, Vec::new());
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("sslmode", "require" | "verify-ca" | "verify-full")) => tls = true,
                Some(("sslmode", "prefer" | "allow" | "disable")) => {}
                // libpq's "use the system's roots": those are trusted anyway.
                Some(("sslrootcert", "system")) => {}
                Some(("sslrootcert", path)) => root = Some(PathBuf::from(path)),
                _ => kept.push(pair),
            }
        }
        if tls {
            kept.push("sslmode=require");
        }
        let url = match kept.is_empty() {
            true => base.to_string(),
            false => format!("{base}?{}", kept.join("&")),
        };
        Settings { url, tls, root }
    }

    /// The pool's manager for `config`: TLS with genai's roots (and `sslrootcert`'s) when
    /// asked, else plain.
    pub(crate) fn manager(&self, config: tokio_postgres::Config, shown: &str) -> Result<Manager> {
        let recycling = || ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        if !self.tls {
            let mut config = config;
            config.ssl_mode(SslMode::Disable);
            return Ok(Manager::from_config(
                config,
                tokio_postgres::NoTls,
                recycling(),
            ));
        }
        let roots = genai_core::tls::rustls_roots(self.root.as_deref()).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("[store] url `{shown}`'s sslrootcert: {e}"),
            )
        })?;
        let client = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_postgres_rustls::MakeRustlsConnect::new(client);
        Ok(Manager::from_config(config, connector, recycling()))
    }
}

/// What to do about a failed connection that TLS explains, to follow its error: `""` if none.
pub(crate) fn hint(error: &str) -> &'static str {
    if error.contains("invalid peer certificate") {
        " (genai verifies the server's certificate: trust its authority with sslrootcert=PATH in the URL, or SSL_CERT_FILE)"
    } else if error.contains("no encryption") {
        " (the server wants TLS: add ?sslmode=require to the URL)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::Settings;

    #[test]
    fn libpq_tls_settings_become_tokio_postgres_ones_and_require_means_verified() {
        let plain = Settings::read("postgres://u:p@db/genai");
        assert_eq!((plain.tls, plain.root), (false, None));
        let prefer = Settings::read("postgres://u:p@db/genai?sslmode=prefer&connect_timeout=3");
        assert_eq!(prefer.url, "postgres://u:p@db/genai?connect_timeout=3");
        assert!(!prefer.tls);
        let full = Settings::read(
            "postgres://u:p@db:5432/genai?sslrootcert=/etc/ca.pem&sslmode=verify-full",
        );
        assert_eq!(full.url, "postgres://u:p@db:5432/genai?sslmode=require");
        assert!(full.tls);
        assert_eq!(
            full.root.as_deref(),
            Some(std::path::Path::new("/etc/ca.pem"))
        );
        let system = Settings::read("postgres://db/genai?sslmode=require&sslrootcert=system");
        assert_eq!((system.tls, system.root), (true, None));
    }
}
