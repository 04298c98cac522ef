//! HTTPS in front of a loopback test server: a TLS listener on 127.0.0.1 with a certificate
//! for that address, signed by a certificate authority made for the test with the `openssl`
//! command ([`TestCa`], which the tests of TLS to Postgres and Redis use too), relaying each
//! connection's bytes to the plain server behind it. For the tests of which certificates genai
//! trusts (the system's, or `SSL_CERT_FILE`'s).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// A certificate authority made for one test, and a certificate it signed for 127.0.0.1
/// (`server.pem`, its key `server.key`), in a folder removed at drop.
pub struct TestCa {
    dir: tempfile::TempDir,
}

impl TestCa {
    pub fn make() -> TestCa {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let key = ["-newkey", "rsa:2048", "-nodes", "-days", "2"];
        openssl(
            d,
            &[
                &["req", "-x509"][..],
                &key,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-subj",
                    "/CN=genai test CA",
                ],
            ]
            .concat(),
        );
        openssl(
            d,
            &[
                &["req"][..],
                &key[..3],
                &[
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
        );
        std::fs::write(
            d.join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.pem",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
            ],
        );

        TestCa { dir }
    }

    /// The authority's certificate, to trust (`SSL_CERT_FILE`, a URL's `sslrootcert`).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The server's certificate, for 127.0.0.1.
    pub fn cert_file(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The server certificate's private key.
    pub fn key_file(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }
}

/// A running TLS front; it stops with the test process.
pub struct TlsFront {
    port: u16,
    ca: TestCa,
}

fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (Debian's openssl package)");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

impl TlsFront {
    /// A front for the plain HTTP server on 127.0.0.1:`backend`.
    pub fn start(backend: u16) -> TlsFront {
        let ca = TestCa::make();
        let certs: Vec<CertificateDer> = CertificateDer::pem_file_iter(ca.cert_file())
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(ca.key_file()).unwrap();
        let config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while let Ok((socket, _)) = listener.accept().await {
                    let acceptor = acceptor.clone();
                    tokio::spawn(async move {
                        // A client that refuses the certificate ends its handshake: nothing to relay.
                        let Ok(mut tls) = acceptor.accept(socket).await else {
                            return;
                        };
                        let Ok(mut plain) =
                            tokio::net::TcpStream::connect(("127.0.0.1", backend)).await
                        else {
                            return;
                        };
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                    });
                }
            });
        });
        TlsFront { port, ca }
    }

    /// `https://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// The test authority's certificate, to trust through `SSL_CERT_FILE`.
    pub fn ca_file(&self) -> PathBuf {
        self.ca.ca_file()
    }
}
